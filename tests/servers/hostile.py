"""Hostile servers on 127.0.0.1: raw sockets that break HTTP the ways real broken or malicious
peers do (trickled heads and bodies, a megabyte of headers, a close mid-body, bytes that are not
HTTP, a TLS port that never finishes its handshake). Each connection is served by a behaviour
`(conn, request_head) -> None`; every server stops within LIFETIME_S even if a client hangs on."""

from __future__ import annotations

import socket
import threading
import time
import zlib
from collections.abc import Callable
from typing import Any

LIFETIME_S = 60.0  # no behaviour outlives this, whatever the client does
Behaviour = Callable[["HostileServer", socket.socket, bytes], None]


class HostileServer:
    def __init__(self, behaviour: Behaviour, read_request: bool = True) -> None:
        self.behaviour = behaviour
        self.read_request = read_request  # False: act on accept, before any byte arrives (TLS hang)
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(32)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.started = time.monotonic()
        self.requests: list[bytes] = []  # request heads as received
        self.thread = threading.Thread(target=self.serve, daemon=True)

    def url(self, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}"

    def __enter__(self) -> HostileServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        self.sock.close()

    def alive(self) -> bool:
        return not self.stop.is_set() and time.monotonic() - self.started < LIFETIME_S

    def serve(self) -> None:
        self.sock.settimeout(0.2)
        while self.alive():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(1.0)
            head = b""
            while self.read_request and b"\r\n\r\n" not in head and self.alive():
                try:
                    data = conn.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if not data:
                    return
                head += data
            self.requests.append(head)
            drain(conn, head)  # a body left unread would turn the close into a reset
            try:
                self.behaviour(self, conn, head)
            except OSError:
                pass  # the client gave up: what these servers expect

    def wait(self, seconds: float) -> None:
        self.stop.wait(seconds)


def drain(conn: socket.socket, head: bytes) -> None:
    _, _, rest = head.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0)
    while len(rest) < length:
        try:
            data = conn.recv(65536)
        except OSError:
            return
        if not data:
            return
        rest += data


def trickle(server: HostileServer, conn: socket.socket, data: bytes, every: float) -> None:
    for i in range(len(data)):
        if not server.alive():
            return
        conn.sendall(data[i : i + 1])
        server.wait(every)


def json_head(length: int) -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % length


def trickled_headers(server: HostileServer, conn: socket.socket, head: bytes) -> None:
    """The status line at once, then the headers one byte every 0.3 s."""
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    trickle(server, conn, b"content-type: application/json\r\nx-padding: " + b"a" * 500 + b"\r\n\r\n{}", 0.3)


def trickled_body(server: HostileServer, conn: socket.socket, head: bytes) -> None:
    """Complete headers, then a JSON body one byte every 0.3 s."""
    body = b'{"object": "list", "data": [' + b" " * 400 + b"]}"
    conn.sendall(json_head(len(body)))
    trickle(server, conn, body, 0.3)


def megabyte_of_headers(server: HostileServer, conn: socket.socket, head: bytes) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n")
    line = b"x-junk: " + b"j" * 1000 + b"\r\n"
    for _ in range(1024):
        conn.sendall(line)
    conn.sendall(b"content-length: 2\r\n\r\n{}")


def closed_mid_body(server: HostileServer, conn: socket.socket, head: bytes) -> None:
    """A Content-Length of 1000, 100 bytes of it, then the connection closes."""
    conn.sendall(json_head(1000) + b'{"object": "list", "data": [' + b" " * 72)


def not_http(server: HostileServer, conn: socket.socket, head: bytes) -> None:
    """What an SSH daemon says on connect: a banner, not an HTTP status line."""
    conn.sendall(b"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13.5\r\n")
    server.wait(0.5)


def deep_json(server: HostileServer, conn: socket.socket, head: bytes) -> None:
    """A well-formed JSON body nested 100,000 levels deep (200,000 bytes)."""
    body = b"[" * 100_000 + b"]" * 100_000
    conn.sendall(json_head(len(body)) + body)


def silent(server: HostileServer, conn: socket.socket, head: bytes) -> None:
    """Accept and say nothing (with read_request=False: a TLS port whose handshake never ends)."""
    server.wait(LIFETIME_S)


def status_line_then_close(server: HostileServer, conn: socket.socket, head: bytes) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\n")


def gzip_bomb(server: HostileServer, conn: socket.socket, head: bytes) -> None:
    """512 MiB of zeros as about 0.5 MB of gzip, announced as JSON."""
    body = bomb()
    conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\n"
                 b"content-length: %d\r\n\r\n" % len(body) + body)  # fmt: skip


_BOMB: list[bytes] = []


def bomb() -> bytes:
    if not _BOMB:
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)
        zeros = bytes(64 * 1024 * 1024)
        _BOMB.append(b"".join(packer.compress(zeros) for _ in range(8)) + packer.flush())
    return _BOMB[0]


def closed_at_once(server: HostileServer, conn: socket.socket, head: bytes) -> None:
    """Accept and close (with read_request=False: a TLS port that drops every handshake)."""

"""A real forwarding proxy on 127.0.0.1: absolute-URI requests for http:// and CONNECT tunnels
for https://, the two things HTTP_PROXY/HTTPS_PROXY make a client do. Records what it carried."""

from __future__ import annotations

import select
import socket
import threading
from typing import Any
from urllib.parse import urlsplit


class Proxy:
    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.seen: list[str] = []  # request lines
        self.running = True
        self.thread = threading.Thread(target=self.serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Proxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.running = False
        self.sock.close()

    def serve(self) -> None:
        while self.running:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def handle(self, conn: socket.socket) -> None:
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                data = conn.recv(65536)
                if not data:
                    return
                head += data
            head, rest = head.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            method, target, version = lines[0].split(" ", 2)
            self.seen.append(f"{method} {target}")
            if method == "CONNECT":
                host, port = target.rsplit(":", 1)
                with socket.create_connection((host, int(port)), timeout=10) as up:
                    conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    self.pipe(conn, up, rest)
                return
            url = urlsplit(target)
            headers = [h for h in lines[1:] if not h.lower().startswith(("proxy-", "connection:"))]
            length = next((int(h.split(":", 1)[1]) for h in headers if h.lower().startswith("content-length:")), 0)
            while len(rest) < length:
                data = conn.recv(65536)
                if not data:
                    return
                rest += data
            path = (url.path or "/") + (f"?{url.query}" if url.query else "")
            out = "\r\n".join([f"{method} {path} {version}", *headers, "Connection: close", "", ""]).encode("latin-1")
            with socket.create_connection((url.hostname, url.port or 80), timeout=10) as up:
                up.sendall(out + rest)
                conn.sendall(self.closing_head(up))
                self.pipe(conn, up, b"")

    @staticmethod
    def closing_head(up: socket.socket) -> bytes:
        """The upstream's response head with `Connection: close`: this proxy serves one request per
        client connection, and says so, as a real proxy would."""
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = up.recv(65536)
            if not chunk:
                return data
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        lines = [h for h in head.split(b"\r\n") if not h.lower().startswith(b"connection:")]
        return b"\r\n".join([*lines, b"Connection: close", b"", b""]) + body

    @staticmethod
    def pipe(a: socket.socket, b: socket.socket, pending: bytes) -> None:
        if pending:
            b.sendall(pending)
        socks = [a, b]
        while True:
            ready, _, _ = select.select(socks, [], [], 15)
            if not ready:
                return
            for s in ready:
                data = s.recv(65536)
                if not data:
                    return
                (b if s is a else a).sendall(data)

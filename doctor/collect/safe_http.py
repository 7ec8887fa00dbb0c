"""The rules every collector's HTTP request follows: bounded in wall-clock time and in bytes,
credentials only to the origin they belong to, JSON parsed without a RecursionError.

httpx's timeouts are per network operation: a server that sends its status line, headers or
body one byte a second resets the read timeout with every byte and is never cut. A Watchdog
gives each request a wall-clock limit instead: httpx's trace hook hands it every socket the
request opens, and when the time is up it shuts them down, which wakes the blocked read at once.
Keep-alive is off (`client()`), so every request opens its own connection and the watchdog sees
it. Header bytes are bounded by httpcore (h11 refuses a head over 100 KiB); bodies by `Inflater`,
which decodes gzip/deflate itself with a bound on the output (httpx would inflate each 64 KiB read
whole: a gzip bomb costs it 64 MiB a read).
"""

from __future__ import annotations

import json
import socket
import threading
import zlib
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

# httpcore's trace events (after their `connection.`, `proxy.` or `http11.` prefix) for the parts
# of an exchange, as a person would say them
PHASES = {
    "connect_tcp": "connecting",
    "start_tls": "in the TLS handshake",
    "send_request_headers": "sending the request",
    "send_request_body": "sending the request",
    "receive_response_headers": "waiting for the status line and headers",
    "receive_response_body": "reading the body",
}
GRACE_S = 0.25  # a body loop that checks its own time limit gets this long to stop by itself


class Watchdog:
    """Shuts down a request's sockets when its wall-clock time is up (see the module docstring)."""

    def __init__(self, seconds: float, grace: float = GRACE_S) -> None:
        self.seconds = seconds
        self.fired = False
        self.phase = "connecting"
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, seconds) + grace, self._fire)
        self._timer.daemon = True

    def __enter__(self) -> Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    @property
    def extensions(self) -> dict[str, Any]:
        """The request extensions that let this watchdog see the request's sockets."""
        return {"trace": self.trace}

    def trace(self, name: str, info: dict[str, Any]) -> None:
        event, _, stage = name.rpartition(".")
        event = event.rpartition(".")[2]
        if stage == "started" and event in PHASES:
            self.phase = PHASES[event]
        stream = info.get("return_value") if stage == "complete" else None
        sock = stream.get_extra_info("socket") if hasattr(stream, "get_extra_info") else None
        if isinstance(sock, socket.socket):
            self.watch(sock)

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.fired:
                _shut(sock)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    """Shut the socket down under any TLS layer: a thread blocked reading it wakes with EOF."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass  # already closed


class WallClockTimeout(httpx.ReadTimeout):
    """The request's wall-clock limit passed; the message says in which phase."""


def timed_out(dog: Watchdog, seen: int | None = None) -> WallClockTimeout:
    got = f" ({seen} bytes of body read)" if seen else ""
    return WallClockTimeout(f"no complete answer within {dog.seconds:.3g} s: still {dog.phase}{got}")


def client(**kwargs: Any) -> httpx.Client:
    """An httpx client for bounded requests: no keep-alive (each request's own socket is watched),
    no redirects followed (credentials never travel to where a Location points), bodies asked for
    uncompressed and read raw (`Inflater` decodes what a server compresses anyway)."""
    kwargs.setdefault("limits", httpx.Limits(max_keepalive_connections=0))
    kwargs["headers"] = {"accept-encoding": "identity", **(kwargs.get("headers") or {})}
    return httpx.Client(follow_redirects=False, **kwargs)


class Inflater:
    """A body's bytes as sent (iter_raw) decoded with at most `limit` bytes of output in all."""

    def __init__(self, content_encoding: str, limit: int) -> None:
        encoding = content_encoding.lower().strip()
        self.zlib = zlib.decompressobj(47) if encoding in ("gzip", "x-gzip", "deflate") else None  # 47: gzip or zlib header
        self.left = limit

    def feed(self, raw: bytes) -> bytes:
        if self.zlib is None:
            out = raw[: self.left]
        else:
            try:
                out = self.zlib.decompress(raw, self.left)
            except zlib.error as exc:
                raise httpx.DecodingError(f"the compressed body is corrupt: {exc}") from None
        self.left -= len(out)
        return out

    @property
    def full(self) -> bool:
        return self.left <= 0


@dataclass
class Fetched:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    truncated: bool = False  # the body was longer than max_bytes

    def json(self) -> Any:
        return parse_json(self.body.decode("utf-8", errors="replace"))


def fetch(http: httpx.Client, method: str, url: str, seconds: float, max_bytes: int, **kwargs: Any) -> Fetched:
    """One request, its status line, headers and at most max_bytes of body, all within `seconds`
    of wall-clock time; raises WallClockTimeout past it (an httpx.TimeoutException)."""
    body = bytearray()
    with Watchdog(seconds, grace=0.0) as dog:
        try:
            with http.stream(method, url, timeout=httpx.Timeout(seconds), extensions=dog.extensions, **kwargs) as resp:
                out = Fetched(resp.status_code, dict(resp.headers))
                inflater = Inflater(resp.headers.get("content-encoding", ""), max_bytes)
                for raw in resp.iter_raw():
                    body += inflater.feed(raw)
                    if inflater.full:
                        out.truncated = True
                        break
        except httpx.HTTPError as exc:
            if dog.fired:
                raise timed_out(dog, len(body)) from exc
            raise
    out.body = bytes(body)
    return out


def parse_json(text: str) -> Any:
    """json.loads that turns nesting deeper than Python's recursion limit into a ValueError."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deep to parse") from None


def origin(url: str | httpx.URL) -> tuple[str, str, int]:
    """(scheme, host, port) with the scheme's default port: what a credential is bound to."""
    parts = urlsplit(str(url))
    scheme = (parts.scheme or "").lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or (443 if scheme == "https" else 80)


def same_origin(a: str | httpx.URL, b: str | httpx.URL) -> bool:
    return origin(a) == origin(b)

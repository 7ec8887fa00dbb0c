"""A small threaded HTTP(S) server on 127.0.0.1 driven by an app function `Request -> Reply`.

Real sockets, real status lines and bodies; replies can be delayed, streamed in chunks with
pauses (SSE), sent with a Content-Length as a buffering proxy does, or never sent at all.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent.parent.parent / "fixtures" / "http"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        try:
            return json.loads(self.body or b"null")
        except ValueError:
            return None


@dataclass
class Reply:
    status: int = 200
    body: Any = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    chunks: Iterable[bytes] | None = None  # streamed one by one (may be endless), then the connection closes
    chunk_delay: float = 0.0
    delay: float = 0.0  # before the status line
    hang: bool = False  # accept, read the request, never answer

    def payload(self) -> bytes:
        if isinstance(self.body, (dict, list)):
            return json.dumps(self.body).encode()
        return self.body.encode() if isinstance(self.body, str) else bytes(self.body)


App = Callable[[Request], Reply]


class FakeServer:
    def __init__(self, app: App, ssl_context: ssl.SSLContext | None = None, port: int = 0) -> None:
        self.app = app
        self.requests: list[Request] = []
        self.stop_event = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def handle_one(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                req = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                server.requests.append(req)
                reply = server.app(req)
                if reply.hang:
                    server.stop_event.wait(60)
                    return
                if reply.delay:
                    server.stop_event.wait(reply.delay)
                self.send_response(reply.status)
                self.send_header("content-type", reply.content_type)
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                if reply.chunks is None:
                    data = reply.payload()
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_header("connection", "close")
                self.close_connection = True
                self.end_headers()
                self.wfile.flush()
                for chunk in reply.chunks:
                    if server.stop_event.is_set():
                        return
                    self.wfile.write(chunk)
                    self.wfile.flush()
                    if reply.chunk_delay:
                        time.sleep(reply.chunk_delay)

            do_GET = do_POST = do_PUT = do_DELETE = handle_one  # noqa: N815

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)  # port: one a client already waits on
        self.httpd.daemon_threads = True
        if ssl_context is not None:
            self.httpd.socket = ssl_context.wrap_socket(self.httpd.socket, server_side=True)
        self.scheme = "https" if ssl_context else "http"
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def __enter__(self) -> FakeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop_event.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def free_port() -> int:
    """A port nothing listens on (bound then closed: connecting to it is refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fixed(reply: Reply) -> App:
    """Every request gets the same answer (a proxy error page, a 429, a hang ...)."""
    return lambda req: reply

"""A real HTTP server on 127.0.0.1 (the standard library's, in a thread) for http-tool tests.

Routes answer from the request: ``/orders/<id>`` echoes the path, query, headers and body it
was sent as JSON; ``/status/<code>`` answers that status with a body; ``/bytes/<n>`` answers
``n`` bytes of text; ``/slow/<seconds>`` answers after a delay; ``/drip/<seconds>`` starts an
answer and sends one byte of it every that many seconds, never finishing, until the client
hangs up; ``/drop`` closes the connection without answering. Every request is kept in `requests`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Seen:
    """A request the server received."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class Server:
    """The running server: its port and what it has been sent."""

    port: int = 0
    requests: list[Seen] = field(default_factory=list)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _handler(server: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

        def _answer(self, status: int, body: bytes, kind: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _handle(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            seen = Seen(
                method=self.command,
                path=parts.path,
                query=parse_qs(parts.query, keep_blank_values=True),
                headers={k.lower(): v for k, v in self.headers.items()},
                body=json.loads(raw) if raw else None,
            )
            server.requests.append(seen)
            segments = parts.path.split("/")
            route = segments[1] if len(segments) > 1 else ""
            if route == "orders":
                echo = {
                    "method": seen.method,
                    "path": seen.path,
                    "query": seen.query,
                    "body": seen.body,
                    "authorization": seen.headers.get("authorization"),
                }
                self._answer(200, json.dumps(echo).encode())
            elif route == "status":
                code = int(segments[2])
                text = f"status {code}: " + "details " * 600
                self._answer(code, text.encode(), "text/plain")
            elif route == "bytes":
                self._answer(200, b"x" * int(segments[2]), "text/plain")
            elif route == "slow":
                time.sleep(float(segments[2]))
                self._answer(200, b'"late"')
            elif route == "drip":
                self._drip(float(segments[2]))
            elif route == "drop":
                self.close_connection = True
                self.connection.close()
            else:
                self._answer(404, b"no such route", "text/plain")

        def _drip(self, every: float) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/plain")
            self.send_header("content-length", str(10**9))  # a body that is never all sent
            self.end_headers()
            deadline = time.monotonic() + 600  # never outlive a client that never gives up
            try:
                while time.monotonic() < deadline:
                    self.wfile.write(b".")
                    self.wfile.flush()
                    time.sleep(every)
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle

    return Handler


@contextmanager
def serve() -> Iterator[Server]:
    """Run the server on a free port of 127.0.0.1 until the block ends."""
    state = Server()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)

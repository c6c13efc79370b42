"""A tiny HTTP server on 127.0.0.1 that records every request (a Pushgateway, a collector)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    method: str
    path: str
    content_type: str
    body: bytes


@dataclass
class Recorder:
    url: str
    requests: list[Received] = field(default_factory=list)


@contextmanager
def recording_server(status: int = 200) -> Iterator[Recorder]:
    """Answers every PUT/POST with ``status`` (and an empty body), keeping what it got."""
    got: list[Received] = []

    class Handler(BaseHTTPRequestHandler):
        def _take(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            got.append(Received(self.command, self.path, self.headers.get("Content-Type", ""),
                                self.rfile.read(length)))  # fmt: skip
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_PUT = do_POST = _take

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Recorder(f"http://127.0.0.1:{server.server_address[1]}", got)
    finally:
        server.shutdown()
        server.server_close()

"""A local stand-in for the providers' APIs: an HTTP server on 127.0.0.1 in a thread.

Routes answer with fixture JSON in the providers' documented formats; every
request is recorded (path, query, headers) so tests can check what was sent.
A guard refuses any connection that is not to 127.0.0.1.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import pytest

from greenml.accounting.live import HttpSettings

RESPONSES = Path(__file__).parent / "responses"


def load(name: str) -> Any:
    """A fixture response, parsed."""
    return json.loads((RESPONSES / name).read_text())


@dataclass
class Reply:
    """One canned answer."""

    body: Any = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class Received:
    """One request as the server saw it."""

    path: str
    query: dict[str, str]
    headers: dict[str, str]


class FakeApi:
    """Routes by exact path; a route's replies are used in turn, the last one repeats."""

    def __init__(self) -> None:
        self.url = ""
        self.requests: list[Received] = []
        self._routes: dict[str, list[Reply]] = {}
        self._lock = threading.Lock()

    def route(self, path: str, *replies: Reply | Any) -> None:
        """Answer ``path`` with these replies (plain values are 200 JSON bodies)."""
        self._routes[path] = [r if isinstance(r, Reply) else Reply(r) for r in replies]

    def hits(self, path: str) -> list[Received]:
        """Requests received for one path."""
        return [r for r in self.requests if r.path == path]

    def next_reply(self, received: Received) -> Reply:
        with self._lock:
            self.requests.append(received)
            replies = self._routes.get(received.path)
            if not replies:
                return Reply({"message": f"no route for {received.path}"}, 404)
            return replies.pop(0) if len(replies) > 1 else replies[0]


def _handler(api: FakeApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            received = Received(
                unquote(parts.path),
                dict(parse_qsl(parts.query)),
                {k.lower(): v for k, v in self.headers.items()},
            )
            reply = api.next_reply(received)
            if reply.delay_s:
                time.sleep(reply.delay_s)
            body = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                content_type = "text/html" if isinstance(reply.body, bytes) else "application/json"
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout tests)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture(autouse=True)
def _local_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refuse any connection that is not to this machine: tests never reach the internet."""
    real = socket.create_connection

    def guarded(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        if address[0] not in ("127.0.0.1", "localhost"):
            raise ConnectionRefusedError(f"test tried to reach {address[0]}")
        return real(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", guarded)


@pytest.fixture
def api() -> Iterator[FakeApi]:
    """A fresh fake API server on 127.0.0.1 with an ephemeral port."""
    fake = FakeApi()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_port}"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


class Sleeps(list[float]):
    """Records the waits asked for instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def fast(sleeps: Sleeps) -> HttpSettings:
    """Short timeouts, tiny backoff, waits recorded rather than slept."""
    return HttpSettings(
        connect_timeout_s=1.0, read_timeout_s=2.0, backoff_base_s=0.001, sleep=sleeps
    )

"""The scrape endpoint's HTTP server: bounded threads, timeouts, a real backlog.

:class:`ScrapeServer` is a stdlib ``HTTPServer`` with three changes:

- a connection's request head is read in a selector, without a thread, and
  the connection is closed unless the whole head (up to the blank line, at most
  ``MAX_HEAD_BYTES``) arrives within ``timeout_s`` of its connecting; only a
  complete request goes to the pool of ``workers`` threads, which reads it from
  memory. So idle connections and slow ones dribbling their request a byte at a
  time (slowloris) cost a file descriptor, never a thread, and cannot starve the
  scrapes (beyond ``max_waiting`` the oldest waiting one is closed);
- a listen backlog of 128 (the stdlib's 5 drops SYNs under 20 concurrent
  scrapers: 1 s and 3 s retransmits);
- a client that hangs up prints nothing; any other handler error is logged
  (logger ``greenml.exporter``), not printed.

Why not a library: cheroot hands every new connection to a worker thread
until its first request (N idle connections block N workers for their
timeout), and uvicorn never times out a connection that sends nothing.

:class:`ScrapeHandler` answers ``/metrics`` (content negotiation, gzip and
``name[]`` filters as prometheus_client's own handler), a small index at
``/`` and 404 elsewhere. Scrapes that arrive while the registry is being
rendered, or shortly after, share that rendering (:class:`SharedRender`).
"""

from __future__ import annotations

import errno
import io
import logging
import selectors
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

log = logging.getLogger("greenml.exporter")

INDEX = b"""<!doctype html>
<html><head><title>greenml exporter</title></head>
<body><h1>greenml exporter</h1><p><a href="/metrics">/metrics</a></p></body></html>
"""

# A client that went away (reset, closed, or too slow): nothing to report.
_CLIENT_GONE = (ConnectionError, TimeoutError)
MAX_HEAD_BYTES = 16 * 1024
"""A request head longer than this is not a scrape: the connection is closed."""


class ScrapeServer(HTTPServer):
    """An HTTP/1.0 server whose idle connections hold no thread.

    Args:
        address: ``(host, port)`` to bind (port 0: any free port).
        handler: The request handler class.
        workers: Threads that answer requests (the bound on threads).
        timeout_s: How long a connection may stay silent, and the socket
            timeout of a request being read or written.
        max_waiting: Idle connections kept at most (the oldest is closed).
    """

    request_queue_size = 128
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        *,
        workers: int = 8,
        timeout_s: float = 5.0,
        max_waiting: int = 512,
    ) -> None:
        self.workers = workers
        self.timeout_s = timeout_s
        self.max_waiting = max_waiting
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="greenml-exporter-worker")
        self._selector = selectors.DefaultSelector()
        # fd → (connection, address, deadline, the request head so far), oldest first
        self._waiting: OrderedDict[int, tuple[socket.socket, Any, float, bytearray]] = OrderedDict()
        self._heads: dict[int, bytes] = {}  # fd → a complete head, until its handler takes it
        self._heads_lock = threading.Lock()
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()
        super().__init__(address, handler)  # binds; on failure calls server_close

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Accept, wait for requests, expire idle connections; until :meth:`shutdown`."""
        self._stopped.clear()
        self.socket.setblocking(False)  # accept until none is left
        self._selector.register(self.socket, selectors.EVENT_READ)
        try:
            while not self._stop.is_set():
                for key, _ in self._selector.select(poll_interval):
                    if key.fileobj is self.socket:
                        self._accept()
                    else:
                        self._dispatch(key.fd)
                self._expire(time.monotonic())
        finally:
            self._selector.unregister(self.socket)
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop :meth:`serve_forever` (from another thread) and wait for it."""
        self._stop.set()
        self._stopped.wait()

    def server_close(self) -> None:
        """Close the listener, every waiting connection and the pool."""
        super().server_close()
        for fd in list(self._waiting):
            self._close_waiting(fd)
        self._selector.close()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """An error answering a request (not a hang-up): logged, never printed."""
        log.warning("exporter: error answering %s", client_address, exc_info=True)

    # ------------------------------------------------------------ plumbing

    def _accept(self) -> None:
        """Take every pending connection; one whose request is already here goes straight on."""
        for _ in range(self.request_queue_size):
            try:
                conn, address = self.socket.accept()
            except OSError as exc:  # none left, gone already, or out of descriptors
                if exc.errno in (errno.EMFILE, errno.ENFILE):
                    if self._waiting:  # make room: the longest silent goes
                        self._close_waiting(next(iter(self._waiting)))
                    else:
                        self._stop.wait(0.05)  # the workers hold them all: not a busy loop
                return
            conn.setblocking(False)
            self._wait(conn, address)
            self._dispatch(conn.fileno())  # its request may be here already

    def _wait(self, conn: socket.socket, address: Any) -> None:
        while len(self._waiting) >= self.max_waiting:
            self._close_waiting(next(iter(self._waiting)))
        deadline = time.monotonic() + self.timeout_s  # for the whole head, not per byte
        self._waiting[conn.fileno()] = (conn, address, deadline, bytearray())
        self._selector.register(conn, selectors.EVENT_READ)

    def _dispatch(self, fd: int) -> None:
        """Read what a waiting connection sent; a complete head goes to a worker."""
        conn, address, _, head = self._waiting[fd]
        try:
            data = conn.recv(MAX_HEAD_BYTES + 1 - len(head))
        except BlockingIOError:
            return
        except OSError:
            data = b""
        head += data
        complete = b"\r\n\r\n" in head or b"\n\n" in head
        if not data or (not complete and len(head) > MAX_HEAD_BYTES):
            self._close_waiting(fd)  # gone, or not a scrape
            return
        if not complete:
            return
        del self._waiting[fd]
        self._selector.unregister(conn)
        conn.setblocking(True)
        conn.settimeout(self.timeout_s)
        with self._heads_lock:
            self._heads[fd] = bytes(head)
        self._submit(conn, address)

    def take_head(self, conn: socket.socket) -> bytes | None:
        """The request head read for ``conn`` (once; None when none was read ahead)."""
        with self._heads_lock:
            return self._heads.pop(conn.fileno(), None)

    def _submit(self, conn: socket.socket, address: Any) -> None:
        try:
            self._pool.submit(self._answer, conn, address)
        except RuntimeError:  # the pool is shut down (closing, or the interpreter exiting)
            self.take_head(conn)
            conn.close()

    def _answer(self, conn: socket.socket, address: Any) -> None:
        try:
            self.finish_request(conn, address)
        except _CLIENT_GONE:
            pass
        except Exception:
            self.handle_error(conn, address)
        finally:
            self.shutdown_request(conn)

    def _expire(self, now: float) -> None:
        while self._waiting:
            fd, (_, _, deadline, _) = next(iter(self._waiting.items()))
            if deadline > now:
                break  # in order of arrival: the rest are younger
            self._close_waiting(fd)

    def _close_waiting(self, fd: int) -> None:
        conn, _, _, _ = self._waiting.pop(fd)
        self._selector.unregister(conn)
        conn.close()


class SharedRender:
    """One rendering at a time, shared by the scrapes that arrive meanwhile, reused briefly.

    A scrape arriving while the registry is rendered gets that rendering; one
    arriving within ``max_age_s`` of a rendering's start gets it too, unless
    :meth:`invalidate` was called since (the Exporter calls it at each tick,
    when its figures change). So the figures are at most ``max_age_s`` old,
    and 20 concurrent scrapers cost one rendering, not twenty.
    """

    def __init__(self, max_age_s: float = 0.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_age_s = max_age_s
        self._clock = clock
        self._lock = threading.Lock()
        self._pending: dict[str, Future[bytes]] = {}
        self._done: dict[str, tuple[float, bytes]] = {}  # kind → (rendered at, output)
        self._generation = 0
        self.rendered = 0  # renderings made
        self.shared = 0  # scrapes answered with another's rendering

    def invalidate(self) -> None:
        """The figures changed: the next scrape renders anew."""
        with self._lock:
            self._generation += 1
            self._done.clear()

    def get(self, kind: str, render: Callable[[], bytes]) -> bytes:
        """The output of ``render``, shared with the other callers of the same ``kind``."""
        with self._lock:
            now = self._clock()
            done = self._done.get(kind)
            if done is not None and now - done[0] < self.max_age_s:
                self.shared += 1
                return done[1]
            future = self._pending.get(kind)
            if future is not None:
                owner = False
                self.shared += 1
            else:
                owner, future = True, Future()
                self._pending[kind] = future
                self.rendered += 1
                generation = self._generation
        if not owner:
            return future.result()
        try:
            output = render()
        except BaseException as exc:
            future.set_exception(exc)
            raise
        finally:
            with self._lock:
                del self._pending[kind]
        with self._lock:
            if self._generation == generation and self.max_age_s > 0:
                self._done[kind] = (now, output)
        future.set_result(output)
        return output


class ScrapeHandler(BaseHTTPRequestHandler):
    """``GET /metrics``: the registry; ``/``: an index; anything else: 404."""

    registry: Any = None
    shared: SharedRender
    server_version = "greenml-exporter"
    wbufsize = 1 << 16  # head and body leave in one send (flushed when the handler ends)

    @classmethod
    def factory(cls, registry: Any, shared: SharedRender | None = None) -> type[ScrapeHandler]:
        """A handler class serving ``registry`` (renderings shared through ``shared``)."""
        return type(
            "ScrapeHandler", (cls,), {"registry": registry, "shared": shared or SharedRender()}
        )

    def setup(self) -> None:
        """Read the request from the head the server gathered (a worker never waits on a client)."""
        super().setup()
        server: Any = self.server
        take = getattr(server, "take_head", None)
        head = take(self.connection) if take is not None else None
        if head is not None:
            self.rfile.close()  # the socket's reader: nothing is left to read from it
            self.rfile = io.BytesIO(head)

    def do_GET(self) -> None:
        url = urlparse(self.path)
        if url.path == "/metrics":
            self._metrics(parse_qs(url.query))
        elif url.path == "/":
            self._reply(200, "text/html; charset=utf-8", INDEX)
        else:
            self._reply(404, "text/plain; charset=utf-8", b"not found: see /metrics\n")

    def do_HEAD(self) -> None:
        self.do_GET()

    def _metrics(self, params: dict[str, list[str]]) -> None:
        import gzip

        from prometheus_client.exposition import choose_encoder, gzip_accepted

        encoder, content_type = choose_encoder(self.headers.get("Accept", ""))
        names = params.get("name[]")
        if names:
            output = encoder(self.registry.restricted_registry(names))
        else:
            output = self.shared.get(content_type, lambda: encoder(self.registry))
        headers = []
        if gzip_accepted(self.headers.get("Accept-Encoding", "")):
            output = gzip.compress(output, compresslevel=6)
            headers.append(("Content-Encoding", "gzip"))
        self._reply(200, content_type, output, headers)

    def _reply(
        self,
        status: int,
        content_type: str,
        body: bytes,
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers or []:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """No access log."""

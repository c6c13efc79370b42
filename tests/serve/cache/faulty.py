"""A local port in front of the real Redis that a test makes forward, hang, or refuse."""

from __future__ import annotations

import contextlib
import socket
import threading


def free_port() -> int:
    """A local TCP port nothing listens on (now)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class FaultyRedis:
    """One fixed port, three behaviours, switched by the test.

    - :meth:`forward`: a TCP proxy to the real Redis;
    - :meth:`hang`: accepts connections and never answers;
    - :meth:`refuse`: nothing listens (every open connection is dropped).

    ``accepted`` counts the connections accepted, in any mode.
    """

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.port = free_port()
        self.accepted = 0
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._stop: threading.Event | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def forward(self) -> None:
        self._listen(forward=True)

    def hang(self) -> None:
        self._listen(forward=False)

    def refuse(self) -> None:
        """Close the listener and drop every connection, mid-stream or idle."""
        if self._stop is not None and self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=5)
            self._stop = self._thread = None
        with self._lock:
            sockets, self._open = self._open, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    close = refuse

    def _listen(self, *, forward: bool) -> None:
        self.refuse()
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(0.02)  # the accept loop checks its stop flag this often
        stop = threading.Event()
        self._stop = stop
        self._thread = threading.Thread(
            target=self._accept, args=(listener, stop, forward), daemon=True
        )
        self._thread.start()

    def _accept(self, listener: socket.socket, stop: threading.Event, forward: bool) -> None:
        with listener:
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    continue
                except OSError:
                    return
                conn.settimeout(None)
                with self._lock:
                    self.accepted += 1
                    self._open.append(conn)
                if forward:
                    self._pipe(conn)

    def _pipe(self, conn: socket.socket) -> None:
        try:
            up = socket.create_connection(self.upstream, timeout=2)
        except OSError:
            conn.close()
            return
        up.settimeout(None)
        with self._lock:
            self._open.append(up)
        for src, dst in ((conn, up), (up, conn)):
            threading.Thread(target=_pump, args=(src, dst), daemon=True).start()


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    for sock in (src, dst):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)

"""The agent's socket: who is calling (``SO_PEERCRED``), how much and how fast, one thread each.

Each connection is served by a thread: it reads one line at a time (never more
than ``max_message_bytes``; a longer one is refused and the connection
closed, as the framing is lost), takes a token from the caller's user's bucket
(``requests_per_s``, burst of as many), parses and answers. Anything that goes
wrong inside becomes a refusal with a reason; the thread never dies on a
request. When a connection closes, the changes it held are undone.
"""

from __future__ import annotations

import contextlib
import grp
import logging
import os
import socket
import struct
import threading
import time
from collections import Counter

from greenml.agent.audit import Peer
from greenml.agent.config import AgentConfig, socket_mode
from greenml.agent.protocol import Request, answer, encode, parse_request, refusal
from greenml.agent.service import AgentService
from greenml.errors import AgentRefused, ConfigError, GreenmlError

log = logging.getLogger(__name__)
_CRED = struct.Struct("3i")
PARSED_KEPT = 256  # requests kept parsed, by their exact bytes (bounded: never evicted)


def peer_of(conn: socket.socket) -> Peer:
    """The process on the other end, as the kernel says (not as it says)."""
    pid, uid, gid = _CRED.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size))
    return Peer(pid, uid, gid)


def _answers(path: object) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


class _Bucket:
    """A token bucket: ``rate`` tokens a second, at most ``rate`` stored."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.tokens = rate
        self.at = time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.rate, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


class AgentServer:
    """Listens on the configured socket and serves :class:`AgentService`."""

    def __init__(self, config: AgentConfig, service: AgentService) -> None:
        self.config = config
        self.service = service
        self._lock = threading.Lock()
        self._buckets: dict[int, _Bucket] = {}
        self._open: Counter[int] = Counter()  # uid → open connections
        self._next = 0
        self._stop = threading.Event()
        self._sock: socket.socket | None = None
        self.served = 0
        self._parsed: dict[bytes, Request] = {}

    def bind(self) -> None:
        """Create the socket (a stale one replaced), 0666 or 0660 for the socket group.

        Raises:
            ConfigError: The socket cannot be created, or the group does not exist.
        """
        path = self.config.socket
        try:
            if not path.parent.exists():  # clients must reach the socket: 0755 (umask aside)
                path.parent.mkdir(parents=True)
                os.chmod(path.parent, 0o755)
            if path.is_socket():
                if _answers(path):
                    raise ConfigError(f"a greenml agent already serves {path}")
                path.unlink()  # a stale socket: its agent died
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind(str(path))
            if self.config.socket_group:
                os.chown(path, 0, grp.getgrnam(self.config.socket_group).gr_gid)
            os.chmod(path, socket_mode(self.config))
            sock.listen(64)
        except KeyError:
            raise ConfigError(f"socket group {self.config.socket_group!r} does not exist") from None
        except OSError as exc:
            raise ConfigError(f"cannot create the agent socket {path}: {exc.strerror}") from exc
        sock.settimeout(0.2)
        self._sock = sock

    def serve_forever(self) -> None:
        """Accept connections until :meth:`stop`."""
        assert self._sock is not None, "bind() first"
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._stop.is_set():
                    break
                raise
            conn.settimeout(None)
            self._admit(conn)

    def stop(self) -> None:
        self._stop.set()
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            with contextlib.suppress(OSError):
                self.config.socket.unlink()

    def _admit(self, conn: socket.socket) -> None:
        try:
            peer = peer_of(conn)
        except OSError:
            conn.close()
            return
        with self._lock:
            if self._open[peer.uid] >= self.config.max_connections_per_user and peer.uid != 0:
                too_many = True
            else:
                too_many = False
                self._open[peer.uid] += 1
                self._next += 1
                number = self._next
        if too_many:
            with contextlib.suppress(OSError):
                limit = self.config.max_connections_per_user
                conn.sendall(encode(refusal(None, f"more than {limit} connections", "rate")))
            conn.close()
            return
        threading.Thread(target=self._serve, args=(conn, peer, number), daemon=True,
                         name=f"greenml-agent-{number}").start()  # fmt: skip

    def _serve(self, conn: socket.socket, peer: Peer, number: int) -> None:
        limit = self.config.max_message_bytes
        rfile = conn.makefile("rb")
        try:
            while not self._stop.is_set():
                line = rfile.readline(limit + 1)
                if not line:
                    break
                if len(line) > limit:
                    conn.sendall(encode(refusal(None, f"message over {limit} bytes", "size")))
                    break
                conn.sendall(encode(self.respond(peer, number, line)))
        except OSError:
            pass
        finally:
            with contextlib.suppress(Exception):
                self.service.release_connection(peer, number)
            with contextlib.suppress(OSError):
                rfile.close()
                conn.close()
            with self._lock:
                self._open[peer.uid] -= 1

    def respond(self, peer: Peer, number: int, line: bytes) -> dict[str, object]:
        """The answer to one line: a result or a refusal, never an exception."""
        self.served += 1
        if not self._allowed(peer.uid):
            return refusal(None, f"over {self.config.requests_per_s:g} requests/s", "rate")
        request = self._parsed.get(line)
        if request is None:
            try:
                request = parse_request(line.rstrip(b"\r\n"))
            except AgentRefused as exc:
                return refusal(None, str(exc), exc.code)
            if len(self._parsed) < PARSED_KEPT:  # a counter read repeats its exact line
                self._parsed[line] = request
        try:
            return answer(request.id, self.service.handle(peer, number, request))
        except AgentRefused as exc:
            return refusal(request.id, str(exc), exc.code)
        except GreenmlError as exc:
            return refusal(request.id, str(exc), "unavailable")
        except Exception as exc:  # a bug must not take the agent down: refuse, log
            log.exception("greenml agent: %s failed", request.op)
            return refusal(request.id, f"internal error ({type(exc).__name__})", "internal")

    def _allowed(self, uid: int) -> bool:
        with self._lock:
            bucket = self._buckets.get(uid)
            if bucket is None:
                bucket = self._buckets[uid] = _Bucket(self.config.requests_per_s)
            return bucket.take()

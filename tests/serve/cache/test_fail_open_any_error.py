"""Issue 29 item 4: any Redis error, not only a timeout, leaves the cache and answers.

A full Redis (``maxmemory`` + ``noeviction``, on the real server) and a port that is not
Redis at all (a TCP server answering nonsense) must each leave every call answered by
the function itself, reads of keys cached before the fault included.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from greenml.serve.cache.redis import RedisBackend
from greenml.serve.cache.response import ResponseCache
from tests.helpers import ManualClock

pytestmark = pytest.mark.slow  # changes the shared Redis's memory policy for a moment


@pytest.fixture
def not_redis() -> Iterator[str]:
    """A TCP port that answers every connection with text no Redis would send."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                try:
                    conn.recv(4096)
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\nnot redis\r\n")
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"redis://127.0.0.1:{server.getsockname()[1]}/0"
    stop.set()
    thread.join(timeout=2)
    server.close()


def _answered(cache: ResponseCache, calls: list[str], n: int = 50) -> list[str]:
    def answer(prompt: str) -> str:
        calls.append(prompt)
        return prompt.upper()

    cached = cache.cached(answer, model="m")
    return [cached(f"q{i % 5}") for i in range(n)]


def test_a_port_that_is_not_redis_leaves_every_call_answered(not_redis: str) -> None:
    backend = RedisBackend(not_redis, namespace="x", timeout_s=0.5, clock=ManualClock(500.0))
    calls: list[str] = []
    try:
        got = _answered(ResponseCache(backend, flush_every_s=0), calls)
    finally:
        backend.close()
    assert got == [f"Q{i % 5}" for i in range(50)]
    assert len(calls) == 50  # nothing was cached: every call went to the function


def test_a_full_redis_leaves_every_call_answered_cached_keys_included(
    redis_url: str, namespace: str
) -> None:
    import redis

    admin = redis.Redis.from_url(redis_url)
    saved = admin.config_get("maxmemory*")
    backend = RedisBackend(redis_url, namespace=namespace, timeout_s=0.5, clock=ManualClock(5.0))
    cache = ResponseCache(backend, flush_every_s=0)
    calls: list[str] = []
    try:
        assert _answered(cache, calls, 5) == [f"Q{i}" for i in range(5)]  # q0..q4 cached
        used = int(admin.info("memory")["used_memory"])
        admin.config_set("maxmemory-policy", "noeviction")
        admin.config_set("maxmemory", max(1, used // 2))  # full: every write refused
        calls.clear()
        got = _answered(cache, calls)
    finally:
        admin.config_set("maxmemory", saved.get("maxmemory", "0"))
        admin.config_set("maxmemory-policy", saved.get("maxmemory-policy", "noeviction"))
        for key in admin.scan_iter(f"{namespace}*"):  # the backend itself is backing off
            admin.delete(key)
        backend.close()
    assert got == [f"Q{i % 5}" for i in range(50)]

"""The caches fail open: a Redis refused, hung or dropped costs a probe now and then, not a request.

A local port stands in front of the real Redis (:class:`FaultyRedis`): it
forwards, hangs (accepts and never answers) or refuses, as the test says. The
backoff runs on a manual clock, so "no backend call while backing off" is a
count of attempts, not a wall time.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from urllib.parse import urlparse

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from greenml.errors import CacheUnavailable
from greenml.serve.cache.breaker import Breaker
from greenml.serve.cache.redis import RedisBackend
from greenml.serve.cache.response import ResponseCache
from greenml.serve.cache.semantic import SemanticCache
from greenml.serve.embeddings import HashingEmbedder
from greenml.serve.metrics import export_cache_metrics
from tests.helpers import ManualClock
from tests.serve.cache.faulty import FaultyRedis

TIMEOUT_S = 0.5  # what a hung Redis costs a probe; generous for a loaded CI machine
BACKOFF_S = 0.5
CALLS = 40


@pytest.fixture
def faulty(redis_url: str) -> Iterator[FaultyRedis]:
    where = urlparse(redis_url)
    port = FaultyRedis((where.hostname or "127.0.0.1", where.port or 6379))
    yield port
    port.close()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start=500.0)


@pytest.fixture
def backend(faulty: FaultyRedis, namespace: str, clock: ManualClock) -> Iterator[RedisBackend]:
    """A backend reaching Redis through the faulty port (its keys deleted afterwards)."""
    backend = RedisBackend(
        faulty.url, namespace=namespace, timeout_s=TIMEOUT_S, backoff_s=BACKOFF_S, clock=clock
    )
    yield backend
    faulty.forward()
    clock.advance(3600)
    try:
        backend.clear()
    finally:
        backend.close()


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r for r in caplog.records
        if r.name == "greenml.serve.cache" and r.levelno >= logging.WARNING
    ]  # fmt: skip


def break_redis(faulty: FaultyRedis, how: str) -> None:
    if how == "hung":
        faulty.hang()
    else:  # refused, or dropped: the proxy closes its listener and every connection
        faulty.refuse()


@pytest.mark.parametrize("how", ["refused", "hung", "dropped"])
def test_response_cache_fails_open_and_comes_back(
    how: str,
    faulty: FaultyRedis,
    backend: RedisBackend,
    clock: ManualClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="greenml.serve.cache")
    cache = ResponseCache(backend, flush_every_s=0)
    calls: list[str] = []

    def answer(prompt: str) -> str:
        calls.append(prompt)
        return prompt.upper()

    cached = cache.cached(answer, model="m")
    if how == "dropped":  # healthy first, through the proxy, then the proxy goes away
        faulty.forward()
        assert cached("warm") == "WARM" and cached("warm") == "WARM"
        assert calls == ["warm"]
        assert cache.stats().hits == 1
    break_redis(faulty, how)
    accepted = faulty.accepted

    # Down: every call answered by the function, none raising.
    assert [cached(f"q{i}") for i in range(CALLS)] == [f"Q{i}" for i in range(CALLS)]
    assert calls[-CALLS:] == [f"q{i}" for i in range(CALLS)]
    health = backend.health()
    assert not health.up and health.outages == 1
    # One call found the outage; every other one was refused without a network call.
    assert health.failed_calls == 1
    assert health.skipped_calls >= CALLS - 1
    assert faulty.accepted - accepted <= 1  # the hung server saw one connection at most
    assert len(warnings_of(caplog)) == 1
    stats = cache.stats()
    assert stats.bypasses == CALLS and not stats.backend_up and stats.stale
    assert stats.outages == 1

    # Backing off: each probe doubles the wait; still one warning for the outage.
    for _ in range(3):
        clock.advance(60)
        assert cached("probe") == "PROBE"
    assert backend.health().failed_calls <= 1 + 3 + 1  # + the stats' flush at most
    assert backend.health().retry_in_s == pytest.approx(BACKOFF_S * 8, rel=0.01)
    assert len(warnings_of(caplog)) == 1

    # Redis back: the next probe gets through, the cache works again.
    faulty.forward()
    assert cached("after") == "AFTER"  # still backing off: computed, not stored
    assert backend.health().up is False
    clock.advance(60)
    assert cached("after") == "AFTER"  # the probe: a miss, stored
    assert backend.health().up
    n = len(calls)
    assert cached("after") == "AFTER" and len(calls) == n  # a hit
    stats = cache.stats()
    assert not stats.stale and stats.backend_up
    assert stats.bypasses == CALLS + 3 + 1  # kept in this process, added once it was back
    assert stats.hits == (2 if how == "dropped" else 1)
    assert [r.levelname for r in caplog.records if "is back" in r.getMessage()] == ["INFO"]

    # A second outage: a second warning.
    break_redis(faulty, how)
    assert cached("again") == "AGAIN"
    assert backend.health().outages == 2
    assert len(warnings_of(caplog)) == 2


def test_direct_get_and_put_fail_open(
    faulty: FaultyRedis, backend: RedisBackend, clock: ManualClock
) -> None:
    faulty.refuse()
    cache = ResponseCache(backend, flush_every_s=0)
    assert cache.put("p", {"a": 1}, model="m", energy_j=2.0) == cache.key("p", "m")
    assert cache.get("p", model="m") is None
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.bypasses) == (0, 0, 1)
    assert stats.measured_misses == 1 and stats.stale
    with pytest.raises(CacheUnavailable, match=r"Redis at 127\.0\.0\.1:\d+ is unreachable"):
        backend.get("k")  # the backend itself says so; only the caches fail open


def test_semantic_cache_fails_open_and_comes_back(
    faulty: FaultyRedis, backend: RedisBackend, clock: ManualClock
) -> None:
    faulty.forward()
    cache = SemanticCache(HashingEmbedder(), backend=backend, sync_every_s=0, flush_every_s=0)
    cache.put("How do I reset my password?", "Settings")
    assert cache.get("How do I reset my password?") is not None
    faulty.refuse()
    computed: list[str] = []

    def fresh(prompt: str) -> str:
        computed.append(prompt)
        return "fresh"

    cached = cache.cached(fresh)
    assert [cached("How do I reset my password?") for _ in range(10)] == ["fresh"] * 10
    assert len(computed) == 10
    assert cache.put_many(["a", "b"], [1, 2]) == []  # nothing written, nothing indexed
    assert backend.health().failed_calls == 1
    faulty.forward()
    clock.advance(60)
    assert cached("How do I reset my password?") == "Settings"
    assert cache.stats().bypasses == 10


def test_outage_on_prometheus(
    faulty: FaultyRedis, backend: RedisBackend, clock: ManualClock
) -> None:
    faulty.forward()
    cache = ResponseCache(backend, name="answers", flush_every_s=0)
    registry = CollectorRegistry()
    export_cache_metrics(cache, registry, host="h", job="j")
    cached = cache.cached(str.upper)
    cached("a")
    cached("a")
    faulty.refuse()
    for _ in range(5):
        cached("b")
    from prometheus_client import generate_latest

    samples = {
        (s.name, s.labels.get("result") or s.labels.get("outcome")): s.value
        for family in text_string_to_metric_families(generate_latest(registry).decode())
        for s in family.samples
        if s.labels.get("cache") == "answers"
    }
    assert samples[("greenml_cache_lookups_total", "hit")] == 1
    assert samples[("greenml_cache_lookups_total", "miss")] == 1
    assert samples[("greenml_cache_lookups_total", "bypass")] == 5
    assert samples[("greenml_cache_backend_up", None)] == 0
    assert samples[("greenml_cache_backend_outages_total", None)] == 1
    assert samples[("greenml_cache_backend_calls_total", "failed")] == 1
    assert samples[("greenml_cache_backend_calls_total", "skipped")] >= 4


def test_breaker_lets_one_probe_through_at_a_time() -> None:
    clock = ManualClock(start=0.0)
    breaker = Breaker("store", (ConnectionError,), backoff_s=1.0, max_backoff_s=4.0, clock=clock)

    def fail() -> None:
        with breaker.call():
            raise ConnectionError("refused")

    with pytest.raises(CacheUnavailable, match="store is unreachable: refused"):
        fail()
    with pytest.raises(CacheUnavailable, match=r"next try in 1\.0 s"):
        fail()
    delays = []
    for _ in range(4):
        clock.advance(10)
        with pytest.raises(CacheUnavailable):
            fail()
        delays.append(breaker.health().retry_in_s)
    assert delays == [2.0, 4.0, 4.0, 4.0]  # doubled, capped
    clock.advance(10)
    with breaker.call(), pytest.raises(CacheUnavailable), breaker.call():
        pass  # the probe holds the only pass: a concurrent call is refused at once
    assert breaker.health().up
    with pytest.raises(KeyError), breaker.call():  # the store answered: not an outage
        raise KeyError("x")
    assert breaker.health().up and breaker.health().failed_calls == 5


def test_bad_backoff() -> None:
    from greenml.errors import ConfigError

    with pytest.raises(ConfigError, match="backoff"):
        Breaker("s", (OSError,), backoff_s=0)
    with pytest.raises(ConfigError, match="backoff"):
        RedisBackend("redis://127.0.0.1:1/0", backoff_s=5, max_backoff_s=1)

"""ResponseCache: hits on the normalized request, energy credited, bad values refused."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from greenml.errors import ConfigError
from greenml.serve.cache.memory import MemoryBackend
from greenml.serve.cache.response import ResponseCache
from greenml.serve.requests import RequestMeter
from tests.helpers import ManualClock
from tests.serve.conftest import WALL_OFFSET, fake_meter, sample_at


@pytest.fixture(params=["memory", "redis"])
def backend(request: pytest.FixtureRequest) -> Any:
    if request.param == "memory":
        return MemoryBackend(max_entries=100)
    return request.getfixturevalue("redis_backend")


def stored(backend: Any) -> int:
    """Entries really written (for Redis: value keys, not the bookkeeping)."""
    if isinstance(backend, MemoryBackend):
        return len(backend)
    return len(list(backend.client.scan_iter(match=f"{backend.namespace}:v:*")))


def test_get_put_on_the_normalized_request(backend: Any) -> None:
    cache = ResponseCache(backend, flush_every_s=0)
    assert cache.get("What is  2+2?", model="m", params={"t": 0}) is None
    cache.put("What is 2+2?", {"text": "4", "tokens": [19]}, model="m", params={"t": 0.0})
    hit = cache.get(" What is 2+2? ", model="m", params={"t": 0})
    assert hit is not None and hit.value == {"text": "4", "tokens": [19]} and hit.score == 1.0
    assert cache.get("What is 2+2?", model="other", params={"t": 0}) is None
    stats = cache.stats()
    assert (stats.hits, stats.misses) == (1, 2)
    assert stats.hit_rate == pytest.approx(1 / 3)
    assert stats.energy_saved_j is None  # no miss measured: unknown, not zero


@pytest.mark.parametrize("value", [object(), {"a": {1, 2}}, float("nan"), {(1, 2): "tuple key"}])
def test_unserializable_value_fails_at_put_and_writes_nothing(backend: Any, value: Any) -> None:
    cache = ResponseCache(backend)
    with pytest.raises(ConfigError, match="cannot be stored as JSON"):
        cache.put("prompt", value, model="m")
    assert stored(backend) == 0
    assert cache.get("prompt", model="m") is None


def test_cached_function_credits_hits_with_measured_miss_energy(
    backend: Any, clock: ManualClock
) -> None:
    meter = fake_meter(clock, [(0.0, 100.0)])
    rm = RequestMeter(
        meter, settle_every_s=0, guard_s=0, clock=clock, wall_clock=lambda: clock() + WALL_OFFSET
    )
    cache = ResponseCache(backend, request_meter=rm, price_usd_per_kwh=0.36, flush_every_s=0)
    calls = []

    def generate(prompt: str, temperature: float = 0.0) -> str:
        calls.append(prompt)
        clock.advance(2.0 if "long" in prompt else 1.0)  # 200 J or 100 J at 100 W
        return prompt.upper()

    answer = cache.cached(generate, model="llm")
    assert answer("a long question", temperature=0) == "A LONG QUESTION"
    assert answer("a short one", temperature=0) == "A SHORT ONE"
    clock.advance(0.5)
    assert answer("a  long question ", temperature=0.0) == "A LONG QUESTION"  # a hit
    assert answer("a short one", temperature=0) == "A SHORT ONE"
    assert answer("a short one", temperature=1) == "A SHORT ONE"  # other params: a miss
    assert calls == ["a long question", "a short one", "a short one"]
    sample_at(meter, clock, [float(t) for t in range(8, 21)])  # 1 Hz
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.measured_misses) == (2, 3, 3)
    assert stats.mean_miss_energy_j == pytest.approx(400.0 / 3)
    assert stats.energy_saved_j == pytest.approx(2 * 400.0 / 3)
    assert stats.usd_saved == pytest.approx(2 * 400.0 / 3 / 3.6e6 * 0.36)
    # spread of the mean (200, 100, 100 J: ±25 %) with the misses' own (sampling at 1 Hz)
    measured = (200 * math.hypot(0.02, 0.25) + 200 * math.hypot(0.02, 0.5)) / 400
    assert stats.energy_saved_uncertainty_rel == pytest.approx(math.hypot(0.25, measured))
    routes = {r.route: r.requests for r in rm.report().routes}
    assert routes == {"response-cache:miss": 3, "response-cache:hit": 2}
    assert stats.to_dict()["method"] == "each hit credited with the measured mean energy of a miss"


def test_async_function_and_failures(clock: ManualClock) -> None:
    meter = fake_meter(clock, [(0.0, 10.0)])
    rm = RequestMeter(
        meter, settle_every_s=0, guard_s=0, clock=clock, wall_clock=lambda: clock() + WALL_OFFSET
    )
    cache = ResponseCache(request_meter=rm, flush_every_s=0)

    async def generate(prompt: str) -> str:
        await asyncio.sleep(0)
        clock.advance(1.0)
        if prompt == "bad":
            raise RuntimeError("model failed")
        return "ok"

    answer = cache.cached(generate)
    assert asyncio.run(answer("fine")) == "ok"
    assert asyncio.run(answer("fine")) == "ok"
    with pytest.raises(RuntimeError):
        asyncio.run(answer("bad"))
    sample_at(meter, clock, [10])
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.measured_misses) == (1, 2, 1)  # the failure: no credit
    assert stats.mean_miss_energy_j == pytest.approx(10.0)
    routes = {r.route for r in rm.report().routes}
    assert "response-cache:error" in routes


def test_stats_are_shared_through_redis(redis_backend: Any, redis_url: str) -> None:
    from greenml.serve.cache.redis import RedisBackend

    first = ResponseCache(redis_backend, flush_every_s=0)
    other = RedisBackend(redis_url, namespace=redis_backend.namespace)
    second = ResponseCache(other, flush_every_s=60)  # batches its counts
    try:
        first.put("q", "a", energy_j=50.0)
        assert second.get("q") is not None  # written by the first process
        assert second.get("q") is not None
        assert first.stats().hits == 0  # the second has not flushed yet
        stats = second.stats()  # reading flushes
        assert (stats.hits, stats.measured_misses, stats.energy_saved_j) == (2, 1, 100.0)
        assert first.stats().hits == 2
    finally:
        other.close()

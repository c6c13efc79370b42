"""Fixtures: fake-power Meters on a manual clock, and a real Redis with a fresh namespace."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from greenml.measure.measurement import POWER_INTEGRATED
from greenml.measure.meter import Meter
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from tests.helpers import ManualClock

REDIS_URL = os.environ.get("GREENML_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
WALL_OFFSET = 1.7e9  # Unix time = manual clock + this


def _redis_unavailable(reason: str) -> None:
    message = f"Redis not reachable at {REDIS_URL} ({reason}); set GREENML_TEST_REDIS_URL"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def redis_url() -> str:
    """The Redis URL, checked once per session (fail under CI, else skip)."""
    try:
        import redis
    except ImportError:
        _redis_unavailable("redis-py not installed")
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        _redis_unavailable(" ".join(str(exc).split()))
    return REDIS_URL


@pytest.fixture
def namespace() -> str:
    return f"greenml-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def redis_backend(redis_url: str, namespace: str) -> Iterator[Any]:
    """A RedisBackend in a fresh namespace, deleted afterwards."""
    from greenml.serve.cache.redis import RedisBackend

    backend = RedisBackend(redis_url, namespace=namespace, max_entries=1000)
    yield backend
    backend.clear()
    backend.close()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start=100.0)


def fake_meter(clock: ManualClock, watts: list[tuple[float, float]], **kw: Any) -> Meter:
    """A Meter over one CPU following ``watts`` (time since start, W); it never samples itself."""
    device = FakeDevice("cpu0", watts, method=POWER_INTEGRATED, uncertainty_rel=0.02)
    return Meter(
        sensors=[FakeSensor([device], clock=clock)],
        sample_hz=0,
        clock=clock,
        wall_clock=lambda: clock() + WALL_OFFSET,
        **kw,
    )


def sample_at(meter: Meter, clock: ManualClock, times: list[float]) -> None:
    """Move the clock to each time (since its start) and sample there."""
    start = 100.0
    for t in times:
        clock.now = start + t
        meter.sample_now()

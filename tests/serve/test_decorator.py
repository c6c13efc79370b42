"""@measure_request on sync and async functions."""

from __future__ import annotations

import asyncio

import pytest

from greenml.serve.decorator import measure_request
from greenml.serve.requests import RequestMeter
from tests.helpers import ManualClock
from tests.serve.conftest import WALL_OFFSET, fake_meter, sample_at


def make(clock: ManualClock) -> tuple[RequestMeter, object]:
    meter = fake_meter(clock, [(0.0, 50.0)])
    rm = RequestMeter(
        meter, settle_every_s=0, guard_s=0, clock=clock, wall_clock=lambda: clock() + WALL_OFFSET
    )
    return rm, meter


def test_sync_and_async_functions(clock: ManualClock) -> None:
    rm, meter = make(clock)

    @measure_request(rm)
    def predict(x: int) -> int:
        clock.advance(2.0)
        return x * 2

    @measure_request(rm, route="embed")
    async def embed(text: str) -> str:
        clock.advance(1.0)
        await asyncio.sleep(0)
        clock.advance(1.0)
        return text.upper()

    assert predict.__name__ == "predict"
    assert predict(21) == 42
    assert asyncio.run(embed("hi")) == "HI"
    assert asyncio.iscoroutinefunction(embed)
    clock.advance(1.0)
    sample_at(meter, clock, [10])
    routes = {r.route: r for r in rm.report().routes}
    qualname = predict.__qualname__
    assert set(routes) == {qualname, "embed"}
    assert routes[qualname].energy_j == pytest.approx(100.0)  # 2 s at 50 W
    assert routes["embed"].energy_j == pytest.approx(100.0)


def test_a_failing_call_is_still_measured(clock: ManualClock) -> None:
    rm, meter = make(clock)

    @measure_request(rm, route="boom")
    def boom() -> None:
        clock.advance(3.0)
        raise ValueError("model crashed")

    with pytest.raises(ValueError, match="model crashed"):
        boom()
    sample_at(meter, clock, [10])
    (route,) = rm.report().routes
    assert route.route == "boom" and route.energy_j == pytest.approx(150.0)

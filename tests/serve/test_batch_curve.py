"""Energy per item against batch size on a fake model whose time per batch is known."""

from __future__ import annotations

import pytest

from greenml.errors import ConfigError
from greenml.measure.meter import Meter
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from greenml.serve.batch_curve import BatchPoint, batch_curve, recommend_batch
from tests.helpers import ManualClock

WATTS = 100.0


def batch_seconds(size: int) -> float:
    return 0.010 + 0.002 * size  # a fixed 10 ms per launch, 2 ms per item


def setup() -> tuple[ManualClock, Meter]:
    clock = ManualClock()
    sensor = FakeSensor([FakeDevice("gpu0", [(0.0, WATTS)], uncertainty_rel=0.05)], clock=clock)
    return clock, Meter(sensors=[sensor], sample_hz=0, clock=clock)


def test_curve_and_recommendation() -> None:
    clock, meter = setup()
    runs: list[int] = []

    def run(size: int) -> None:
        runs.append(size)
        clock.advance(batch_seconds(size))

    sizes = [1, 2, 4, 8, 16, 32]
    curve = batch_curve(
        run, sizes, meter, latency_budget_s=0.050, repeats=5, min_time_s=0, warmup=1, clock=clock
    )
    assert [p.batch_size for p in curve.points] == sizes
    assert runs.count(8) == 6  # one warm-up, five timed
    for p in curve.points:
        assert p.runs == 5 and p.method == "counter"
        assert p.latency_p99_s == pytest.approx(batch_seconds(p.batch_size))
        assert p.energy_j_per_batch == pytest.approx(WATTS * batch_seconds(p.batch_size))
        assert p.energy_j_per_item == pytest.approx(WATTS * (0.010 / p.batch_size + 0.002))
    rec = curve.recommendation
    # 16 items take 42 ms (fits 50 ms, leaving 8 ms to fill), 32 take 74 ms (does not)
    assert rec is not None and rec.max_batch == 16
    assert rec.max_wait_ms == pytest.approx(8.0)
    assert rec.saving_rel == pytest.approx(1 - (0.010 / 16 + 0.002) / 0.012)


def test_arrival_rate_limits_the_batch_that_can_fill() -> None:
    points = [
        BatchPoint(b, 5, batch_seconds(b), batch_seconds(b), WATTS * batch_seconds(b), 0.05, "c")
        for b in (1, 2, 4, 8, 16)
    ]
    # at 1000 requests/s, 16 need 15 ms to gather but only 8 ms are left; 8 need 7 of 24 ms
    rec = recommend_batch(points, 0.050, arrival_rate_per_s=1000)
    assert rec is not None and rec.max_batch == 8 and rec.max_wait_ms == pytest.approx(24.0)
    assert "fills in 7.0 ms" in rec.reason
    assert recommend_batch(points, 0.005) is None  # even one item takes 12 ms
    with pytest.raises(ConfigError):
        recommend_batch(points, 0.0)


def test_no_fit_is_a_note_not_a_guess() -> None:
    clock, meter = setup()
    curve = batch_curve(
        lambda b: clock.advance(batch_seconds(b)), [1, 2], meter,
        latency_budget_s=0.005, repeats=2, min_time_s=0, clock=clock,
    )  # fmt: skip
    assert curve.recommendation is None
    assert "no batch size fits 5 ms" in curve.notes[0]
    with pytest.raises(ConfigError):
        batch_curve(lambda b: None, [0, 1], meter)

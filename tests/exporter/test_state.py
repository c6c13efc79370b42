"""LiveState ticks cheaply and builds its snapshot when read: the same figures as
building it at every tick. Fake GPUs on a manual clock; an intensity that changes."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from greenml.exporter.state import LiveState
from greenml.measure.measurement import POWER_INTEGRATED
from greenml.measure.meter import Meter
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from tests.helpers import ManualClock


class Stepping:
    """An intensity source whose value rises by 10 g/kWh at every call."""

    def __init__(self) -> None:
        self.calls = 0

    def intensity(self, start: float, end: float) -> Any:
        self.calls += 1
        value = 100.0 + 10.0 * self.calls
        return SimpleNamespace(series=SimpleNamespace(value_at=lambda t: value),
                               provenance=SimpleNamespace(source="stepping", location="here"))


def state(clock: ManualClock) -> tuple[Meter, LiveState]:
    devices = [FakeDevice(f"gpu{i}", [(0.0, 100.0 * (i + 1)), (30.0, 50.0)],
                          metrics={"utilization": 0.1 * i}) for i in range(3)]
    devices.append(FakeDevice("cpu0", [(0.0, 40.0), (20.0, 90.0)], method=POWER_INTEGRATED))
    meter = Meter(sensors=[FakeSensor(devices, clock)], sample_hz=0, record_samples=True,
                  clock=clock, wall_clock=clock)
    return meter, LiveState(meter, Stepping(), 0.3, intensity_refresh_s=2.0, wall_clock=clock)


@pytest.mark.parametrize("reads_every", [1, 4, 1000])
def test_ticks_read_later_give_the_figures_of_updates(reads_every: int) -> None:
    clock_a, clock_b = ManualClock(), ManualClock()
    meter_a, eager = state(clock_a)  # the snapshot built at every tick
    meter_b, lazy = state(clock_b)  # ticks only, read now and then
    for i in range(60):
        for clock, meter in ((clock_a, meter_a), (clock_b, meter_b)):
            clock.advance(0.1 + (i % 7) * 0.05)
            meter.sample_now()
        built = eager.update()
        lazy.tick()
        if i % reads_every == 0 or i == 59:
            read = lazy.snapshot
            assert read.time_s == built.time_s and read.duration_s == built.duration_s
            assert read.intensity_g_per_kwh == built.intensity_g_per_kwh
            for a, b in zip(read.devices, built.devices, strict=True):
                assert (a.key, a.power_w, a.energy_j, a.utilization) == (
                    b.key, b.power_w, b.energy_j, b.utilization)  # fmt: skip
                assert a.emissions_g == pytest.approx(b.emissions_g, rel=1e-12)
                assert a.cost_usd == pytest.approx(b.cost_usd, rel=1e-12)
    assert eager._intensity.calls == lazy._intensity.calls > 5  # type: ignore[union-attr]


def test_a_tick_reads_the_meter_and_builds_nothing() -> None:
    clock = ManualClock()
    meter, live = state(clock)
    first = live.snapshot
    clock.advance(0.5)
    meter.sample_now()
    live.tick()
    assert live._pending is not None and live._snapshot is first  # built when read, not now
    assert meter.drain_samples() == []  # the tick took the samples
    now = live.snapshot
    assert now is not first and now.time_s == clock() and live._pending is None
    assert {d.key: d.power_w for d in now.devices}["gpu0"] == pytest.approx(100.0 - 50 / 30 * 0.5)

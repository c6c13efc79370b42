"""Windows read their own edges: sampled power at both ends, usage counters of modelled devices.

Scripted sensors on a manual clock: the arithmetic is checked exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

import pytest

from greenml.measure.measurement import (
    DYNAMIC,
    ESTIMATED,
    POWER_INTEGRATED,
    STATIC,
    DeviceEnergy,
    Measurement,
)
from greenml.measure.meter import Meter
from greenml.measure.sensors.base import Device, Sensor
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from greenml.measure.timeline import PartsJ, Usage, UsageModel
from tests.helpers import ManualClock

UNIX_AT_1000 = 1.7e9 - 1000.0  # Unix time of ManualClock() == 0 for these Meters


class ScriptedUsage(Sensor):
    """A modelled CPU whose busy CPU-seconds follow ``busy_w(t)`` (busy CPUs at time t).

    ``linear``: energy = 10 J per busy CPU-second (dynamic) + 1 W over time (static).
    Otherwise the energy of a piece is ``duration × 100 W × utilization²`` (a curve:
    the answer depends on where pieces are cut).
    """

    def __init__(self, clock: ManualClock, busy: Callable[[float], float], linear: bool) -> None:
        self._clock, self._busy, self._linear = clock, busy, linear
        self._t0 = clock()
        self._cpu_s = 0.0
        self._seen = self._t0
        self.reads = 0
        parts = ((DYNAMIC, "10 J per CPU-second"), (STATIC, "1 W floor")) if linear else ()
        self._device = Device("cpu0", "cpu", "scripted", ESTIMATED, 0.3, usage=True, parts=parts)

    @property
    def devices(self) -> list[Device]:
        return [self._device]

    def _advance(self) -> float:
        now = self._clock()
        steps = max(1, round((now - self._seen) / 0.01))
        dt = (now - self._seen) / steps
        for i in range(steps):  # integrate busy CPUs over time, 10 ms at a time
            self._cpu_s += self._busy(self._seen - self._t0 + (i + 0.5) * dt) * dt
        self._seen = now
        return self._cpu_s

    def read_usage(self) -> dict[str, Usage]:
        self.reads += 1
        return {"cpu0": (self._advance(),)}

    def usage_model(self, key: str) -> UsageModel:
        return self._energy

    def _energy(self, duration_s: float, start: Usage, end: Usage) -> PartsJ:
        busy = end[0] - start[0]
        if self._linear:
            return (10 * busy + duration_s, 10 * busy, duration_s)
        u = busy / duration_s if duration_s > 0 else 0.0
        return (duration_s * 100 * u * u,)

    def read_power_w(self) -> dict[str, float]:
        raise AssertionError("a modelled device's power comes from its usage readings")


def step_at(t_s: float) -> Callable[[float], float]:
    """Idle, then one busy CPU from ``t_s`` on."""
    return lambda t: 1.0 if t >= t_s else 0.0


def meter_over(sensor: Sensor, clock: ManualClock) -> Meter:
    meter = Meter(sensors=[sensor], sample_hz=1.0, clock=clock, wall_clock=lambda: 1.7e9)
    meter.close()  # no thread: the test reads when it says so
    return meter


def test_a_short_first_window_of_a_sampled_device_reads_its_own_edges() -> None:
    clock = ManualClock()
    # 10 W idle, then 100 W from 0.5 s on: the work starts with the window
    sensor = FakeSensor(
        [FakeDevice("gpu0", [(0, 10), (0.5, 10), (0.501, 100)], method=POWER_INTEGRATED)],
        clock,
    )
    meter = meter_over(sensor, clock)  # its one sample, at 0 s, reads 10 W
    clock.advance(0.6)
    meter.begin_window("short")
    clock.advance(0.3)
    m = meter.end_window("short")
    # not 10 W held from the sample before the window began
    assert m.total_j == pytest.approx(100 * 0.3)


def test_a_sampled_device_uses_the_samples_inside_and_its_edges() -> None:
    clock = ManualClock()
    trace = [(0.0, 0.0), (10.0, 200.0)]  # a ramp: trapezoids are exact
    sensor = FakeSensor([FakeDevice("gpu0", trace, method=POWER_INTEGRATED)], clock)
    meter = meter_over(sensor, clock)
    clock.advance(0.25)
    meter.begin_window("w")
    for _ in range(5):
        clock.advance(1.0)
        meter.sample_now()
    clock.advance(0.5)
    m = meter.end_window("w")
    assert m.total_j == pytest.approx(10 * (5.75**2 - 0.25**2))  # ∫ 20 t dt from 0.25 to 5.75


def test_a_short_first_window_of_a_modelled_device_is_exact_for_its_utilization() -> None:
    clock = ManualClock()
    sensor = ScriptedUsage(clock, step_at(0.2), linear=True)
    meter = meter_over(sensor, clock)
    clock.advance(0.2)
    meter.begin_window("first")
    clock.advance(0.6)
    m = meter.end_window("first")
    cpu = m.components["cpu"].devices["cpu0"]
    assert cpu.part_j(DYNAMIC) == pytest.approx(10 * 0.6)
    assert cpu.part_j(STATIC) == pytest.approx(0.6)
    assert cpu.energy_j == pytest.approx(6.6)
    assert cpu.uncertainty_rel == 0.3  # the model's: no sampling term for counters
    assert cpu.parts is not None and cpu.parts[DYNAMIC].label == "10 J per CPU-second"
    assert m.part_j(DYNAMIC) == pytest.approx(6.0)


def test_a_curve_is_applied_per_sampler_piece_whatever_other_windows_do() -> None:
    def busy(t: float) -> float:
        return 1.0 if int(t) % 2 else 0.0  # busy every other second

    def measured(tiny_windows: int) -> float:
        clock = ManualClock()
        meter = meter_over(ScriptedUsage(clock, busy, linear=False), clock)
        clock.advance(0.5)
        meter.begin_window("long")
        for second in range(6):
            for i in range(tiny_windows):  # windows cut the time finely: no effect on "long"
                meter.begin_window(f"tiny{second}.{i}")
                clock.advance(0.5 / max(tiny_windows, 1))
                meter.end_window(f"tiny{second}.{i}")
            clock.advance(1.0 - 0.5 * (tiny_windows > 0))
            meter.sample_now()
        clock.advance(0.25)
        return meter.end_window("long").total_j

    # Sampler pieces 0.5–1.5, 1.5–2.5, ..., 5.5–6.5 are each half busy: 100 W × 0.5² × 1 s
    # each; 6.5–6.75 is idle. The window's mean utilization (3 / 6.25 s) would give 144 J.
    assert measured(0) == pytest.approx(6 * 25.0, rel=1e-3)
    assert measured(40) == pytest.approx(measured(0), rel=1e-9)


def test_modelled_samples_are_the_pieces_average_power() -> None:
    clock = ManualClock()
    sensor = ScriptedUsage(clock, step_at(1.0), linear=True)
    meter = Meter(
        sensors=[sensor], sample_hz=0, clock=clock, wall_clock=lambda: 1.7e9, record_samples=True
    )
    for _ in range(3):
        clock.advance(1.0)
        meter.sample_now()
    powers = [s.power_w for s in meter.drain_samples()]
    assert powers == pytest.approx([1.0, 11.0, 11.0])  # no sample for the first reading
    assert meter.current_power_w() == pytest.approx(11.0)


def test_forget_before_keeps_modelled_windows_exact() -> None:
    def busy(t: float) -> float:
        return (int(t * 7) % 5) / 4  # uneven load

    clock = ManualClock()
    trimmed = meter_over(ScriptedUsage(clock, busy, linear=False), clock)
    kept = meter_over(ScriptedUsage(clock, busy, linear=False), clock)
    clock.advance(0.5)
    for meter in (trimmed, kept):
        meter.begin_window("run")
    for step in range(60):
        clock.advance(1.0)
        trimmed.sample_now()
        kept.sample_now()
        if step == 20:
            for meter in (trimmed, kept):
                meter.begin_window("late")
            clock.advance(0.25)
        trimmed.forget_before("cpu0", clock() + UNIX_AT_1000 - 3.0)
    assert len(trimmed._channels["cpu0"].usage or ()) <= 2 * 4 + 2  # memory stays bounded
    for name in ("late", "run"):
        assert trimmed.end_window(name).total_j == kept.end_window(name).total_j  # bit for bit


def test_parts_survive_a_round_trip_and_old_records_load() -> None:
    clock = ManualClock()
    meter = meter_over(ScriptedUsage(clock, step_at(0.0), linear=True), clock)
    meter.begin_window("w")
    clock.advance(2.0)
    m = meter.end_window("w")
    block = m.to_dict()
    device = block["components"]["cpu"]["devices"]["cpu0"]
    assert device["parts"] == {
        DYNAMIC: {"energy_j": pytest.approx(20.0), "label": "10 J per CPU-second"},
        STATIC: {"energy_j": pytest.approx(2.0), "label": "1 W floor"},
    }
    again = Measurement.from_dict("w", m.started_at, m.duration_s, block)
    assert again.part_j(DYNAMIC) == pytest.approx(20.0)
    del device["parts"]  # a record stored before parts existed
    old = Measurement.from_dict("w", datetime.now(tz=timezone.utc), 2.0, block)
    assert old.part_j(DYNAMIC) is None and old.total_j == pytest.approx(22.0)
    assert "parts" not in DeviceEnergy(1.0, "counter", 0.05).to_dict()

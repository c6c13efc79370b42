"""A window's figures, derived when first read, equal those derived when it ended.

The reference is the Meter's former eager derivation (kept here, written against the
timelines' public methods), run on the Meter's state at the window's end. After the
end the sampler goes on, ``forget_before`` trims, devices fall silent; the window's
figures, read only then, must not move by a bit. Scripted sensors on a manual clock.
"""

from __future__ import annotations

import copy
import math
import pickle
from dataclasses import asdict, fields, replace
from datetime import datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from greenml.measure.measurement import (
    NODE,
    POWER_INTEGRATED,
    ComponentEnergy,
    DeviceEnergy,
    EnergyPart,
    Measurement,
)
from greenml.measure.meter import Meter
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from greenml.measure.sensors.nvml_bands import short_window_note
from greenml.measure.slow_counters import edge_uncertainty_rel
from greenml.measure.window_energy import Edges, WindowStart
from tests.helpers import ManualClock
from tests.measure.test_meter_edges import ScriptedUsage

UNIX_AT_0 = 1.7e9 - 1000.0  # Unix time of ManualClock() == 0 for these Meters


def eager(
    meter: Meter, name: str, begin: WindowStart, end_mono: float, edges: Edges
) -> Measurement:
    """The figures as the Meter derived them when the window ended (before issue 35)."""
    duration = max(0.0, end_mono - begin.mono_s)
    per: dict[str, dict[str, DeviceEnergy]] = {}
    for key, ch in meter._channels.items():
        device = ch.device
        devices = per.setdefault(device.component, {})
        if device.has_counter:
            a, b = begin.edges.counters.get(key), edges.counters.get(key)
            if a is not None and b is not None:
                rel, note, period = device.uncertainty_rel, "", device.counter_period_s
                if key in meter._figures.slow_keys or (period and duration < 10 * period):
                    rel = edge_uncertainty_rel(rel, duration)
                    note = short_window_note(duration, period) if period else ""
                devices[key] = DeviceEnergy(b - a, device.method, rel, device.name, note)
                continue
        elif ch.usage is not None:
            a_u, b_u = begin.edges.usage.get(key), edges.usage.get(key)
            if a_u is not None and b_u is not None:
                j = ch.usage.between_readings(begin.mono_s, a_u, max(end_mono, begin.mono_s), b_u,
                                              begin.pinned_usage.get(key))  # fmt: skip
                parts = {n: EnergyPart(x, label) for (n, label), x in zip(device.parts, j[1:],
                         strict=True)} if device.parts else None  # fmt: skip
                devices[key] = DeviceEnergy(j[0], device.method, device.uncertainty_rel,
                                            device.name, "", parts)  # fmt: skip
                continue
        devices[key] = sampled(meter, ch, begin, end_mono, duration, edges)
    node = per.pop(NODE, None)
    started = datetime.fromtimestamp(begin.wall_s, tz=timezone.utc)
    return Measurement(name, started, duration, {c: ComponentEnergy(d) for c, d in per.items()},
                       ComponentEnergy(node) if node else None)  # fmt: skip


def sampled(meter: Meter, ch, begin, end, duration, edges) -> DeviceEnergy:  # type: ignore[no-untyped-def]
    device, line, key = ch.device, ch.timeline, ch.device.key
    if device.has_counter:
        method, note = POWER_INTEGRATED, "energy counter unreadable; sampled power integrated"
    elif device.usage:
        method, note = device.method, "usage counters unreadable; sampled power integrated"
    else:
        method, note = device.method, ""
    if duration == 0:
        return DeviceEnergy(0.0, method, device.uncertainty_rel, device.name, note)
    a_w, b_w = begin.edges.powers.get(key), edges.powers.get(key)
    if a_w is not None and b_w is not None:
        energy = line.between_readings(begin.mono_s, a_w, end, b_w, begin.pinned_j.get(key))
    else:
        if not len(line):
            return DeviceEnergy(0.0, method, 1.0, device.name, "no power reading in this window")
        covered = end
        if ch.gap_start is not None and line.last_time_s is not None:
            covered = min(end, max(begin.mono_s, line.last_time_s))
        start_j = begin.pinned_j.get(key, line.energy_at(begin.mono_s))
        energy = line.energy_at(covered) - start_j if covered > begin.mono_s else 0.0
    sampling = min(1.0, 0.5 * meter._period_s / duration)
    uncertainty = math.hypot(device.uncertainty_rel, sampling)
    gap = ch.gap_seconds(begin.mono_s, end)
    if gap > 0:
        uncertainty += gap / duration
        note = f"{note + '; ' if note else ''}no readings for {gap:.1f} s of {duration:.1f} s"
    return DeviceEnergy(energy, method, min(uncertainty, 1.0), device.name, note)


def busy(t: float) -> float:
    return (int(t * 7) % 5) / 4  # an uneven load


def build(clock: ManualClock, lost_at: float | None, ramp: float) -> Meter:
    zigzag = [(0.7 * i, 5.0 + (i % 3) * abs(ramp) / 10) for i in range(40)]  # not linear
    gpus = FakeSensor(
        [FakeDevice("gpu0", [(0.0, 100.0), (50.0, 100.0 + ramp)], lost_at_s=lost_at),
         FakeDevice("gpu1", [(0.0, 300.0), (20.0, 50.0)], counter_max_j=5000.0),
         FakeDevice("dram0", zigzag, method=POWER_INTEGRATED, lost_at_s=lost_at)],
        clock,
    )  # fmt: skip
    meter = Meter(sensors=[gpus, ScriptedUsage(clock, busy, linear=True)], sample_hz=1.0,
                  clock=clock, wall_clock=lambda: 1.7e9)  # fmt: skip
    meter.close()  # no thread: the test samples when it says so
    return meter


steps = st.lists(st.floats(0.0, 2.5), min_size=0, max_size=8)


@settings(max_examples=60, deadline=None)
@given(
    before=steps,
    inside=steps,
    after=steps,
    last=st.floats(0.0, 1.5),
    lost_at=st.none() | st.floats(0.5, 20.0),
    ramp=st.floats(-50.0, 400.0),
    trim=st.booleans(),
)
def test_figures_read_later_equal_the_figures_at_the_end(
    before: list[float], inside: list[float], after: list[float], last: float,
    lost_at: float | None, ramp: float, trim: bool,
) -> None:  # fmt: skip
    clock = ManualClock(0.0)
    meter = build(clock, lost_at, ramp)
    for dt in before:
        clock.advance(dt)
        meter.sample_now()
    meter.begin_window("w")
    for dt in inside:
        clock.advance(dt)
        meter.sample_now()
    clock.advance(last)
    begin = meter._windows["w"]
    reference = eager(meter, "w", begin, clock(), meter._read_edges())  # the same clock: same reads
    m = meter.end_window("w")
    for dt in after:  # the timelines move on, are trimmed, devices fall silent
        clock.advance(dt + 0.5)
        meter.sample_now()
        if trim:
            for key in ("gpu0", "dram0", "cpu0"):
                meter.forget_before(key, clock() + UNIX_AT_0)
    assert m == reference
    assert m.to_window_dict() == reference.to_window_dict()
    assert m.total_j == reference.total_j and m.uncertainty_rel == reference.uncertainty_rel


def window(clock: ManualClock) -> tuple[Meter, Measurement]:
    meter = build(clock, None, 100.0)
    clock.advance(0.4)
    meter.begin_window("w")
    clock.advance(2.5)
    meter.sample_now()
    clock.advance(0.3)
    return meter, meter.end_window("w")


def test_a_deferred_measurement_is_a_measurement_in_every_way() -> None:
    _, m = window(ManualClock(0.0))
    assert type(m) is Measurement and [f.name for f in fields(m)] == [
        "name", "started_at", "duration_s", "components", "node"]  # fmt: skip
    built = Measurement(m.name, m.started_at, m.duration_s, m.components, m.node)
    assert m == built and repr(m) == repr(built)
    fresh = [window(ManualClock(0.0))[1] for _ in range(3)]  # each underived
    copies = (copy.copy(fresh[0]), copy.deepcopy(fresh[1]), pickle.loads(pickle.dumps(fresh[2])))
    for other in copies:
        assert other == built  # copied and pickled with its figures, never its readings
    assert asdict(window(ManualClock(0.0))[1]) == asdict(built)
    assert replace(window(ManualClock(0.0))[1], name="x") == replace(built, name="x")
    assert Measurement.from_window_dict(m.to_window_dict()) == built


def test_figures_are_derived_once_and_their_readings_let_go() -> None:
    _, m = window(ManualClock(0.0))
    first = m.components
    assert m.components is first and m.started_at.tzinfo is timezone.utc
    assert not hasattr(m, "_figures")  # the readings behind them are released
    m.components = {}  # still a plain, writable field
    assert m.total_j == 0.0

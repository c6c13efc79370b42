"""RequestMeter.settle reads only recent samples and lets the Meter forget older ones."""

from __future__ import annotations

import random
from typing import Any

import pytest

from greenml.measure.measurement import POWER_INTEGRATED
from greenml.measure.meter import Meter
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from greenml.measure.timeline import PowerTimeline
from greenml.serve.requests import RequestMeter, SettledRequest
from tests.helpers import ManualClock
from tests.serve.conftest import WALL_OFFSET

WAVE = [(float(t), 80.0 + (t * 29 % 23) * 7.0) for t in range(0, 4000, 2)]  # W, uneven


class FullCopyMeter(Meter):
    """The path before ``since_s``: every read copies all the history; nothing is forgotten."""

    def timeline(self, key: str, since_s: float | None = None) -> tuple[list[float], list[float]]:
        return super().timeline(key)

    def forget_before(self, key: str, time_s: float, *, holder: str | None = None) -> int:
        return 0


class CountingMeter(Meter):
    """A Meter that counts the samples its timeline reads copy."""

    copied = 0

    def timeline(self, key: str, since_s: float | None = None) -> tuple[list[float], list[float]]:
        times, powers = super().timeline(key, since_s)
        self.copied += len(times)
        return times, powers


def meter_of(kind: type[Meter], clock: ManualClock, *, window: bool = False) -> Any:
    devices = [
        FakeDevice("cpu0", WAVE, method=POWER_INTEGRATED, uncertainty_rel=0.02),
        FakeDevice("dram0", [(0.0, 12.0), (3000.0, 20.0)], method=POWER_INTEGRATED),
    ]
    meter = kind(
        sensors=[FakeSensor(devices, clock=clock)], sample_hz=0, clock=clock,
        wall_clock=lambda: clock() + WALL_OFFSET,
    )  # fmt: skip
    if window:
        meter.begin_window("lifetime")
    return meter


def request_meter(meter: Meter, clock: ManualClock) -> tuple[RequestMeter, list[SettledRequest]]:
    rm = RequestMeter(
        meter, settle_every_s=0, guard_s=0.05, clock=clock,
        wall_clock=lambda: clock() + WALL_OFFSET,
    )  # fmt: skip
    seen: list[SettledRequest] = []
    rm.add_listener(seen.append)
    return rm, seen


def serve(
    clock: ManualClock, meters: list[Meter], seconds: float, *, seed: int = 3,
    after_settle: Any = None,
) -> list[tuple[RequestMeter, list[SettledRequest]]]:  # fmt: skip
    """Drive the same overlapping requests, 4 Hz sampling and a settle a second on every meter."""
    rng = random.Random(seed)
    rms = [request_meter(m, clock) for m in meters]
    live: list[tuple[float, list[int], str]] = []  # end time, tokens per meter, route
    step, steps = 0.25, int(seconds / 0.25)
    for i in range(steps):
        clock.advance(step)
        for end, tokens, route in [x for x in live if x[0] <= clock()]:
            for (rm, _), token in zip(rms, tokens, strict=True):
                rm.finish(token, route)
            live.remove((end, tokens, route))
        for _ in range(rng.choice([0, 0, 1, 2])):
            route = rng.choice(["embed", "generate"])
            duration = rng.choice([0.1, 0.6, 2.3, 7.9]) if route == "generate" else 0.3
            live.append((clock() + duration, [rm.begin(route) for rm, _ in rms], route))
        for meter in meters:
            meter.sample_now()
        if i % 4 == 3:
            for rm, _ in rms:
                rm.settle()
            if after_settle is not None:
                after_settle()
    return rms


def test_settle_results_are_identical_with_and_without_since(clock: ManualClock) -> None:
    new, old = meter_of(Meter, clock), meter_of(FullCopyMeter, clock)
    (rm_new, seen_new), (rm_old, seen_old) = serve(clock, [new, old], 600)
    assert len(seen_new) == len(seen_old) > 500
    for a, b in zip(seen_new, seen_old, strict=True):
        assert (a.route, a.start_s, a.duration_s) == (b.route, b.start_s, b.duration_s)
        assert a.energy_j == pytest.approx(b.energy_j, rel=1e-9, abs=1e-9)
        assert a.uncertainty_rel == b.uncertainty_rel
    assert rm_new.idle_energy_j() == pytest.approx(rm_old.idle_energy_j(), rel=1e-9)
    report_new, report_old = rm_new.report(), rm_old.report()
    assert report_new.energy_j == pytest.approx(report_old.energy_j, rel=1e-9)
    assert report_new.idle_energy_j == pytest.approx(report_old.idle_energy_j, rel=1e-9)
    assert len(new.timeline("cpu0")[0]) < 60 < len(old.timeline("cpu0")[0])


def test_settle_cost_stays_flat_as_history_grows(clock: ManualClock) -> None:
    costs = {}
    for history_s in (100.0, 1000.0):
        clock.now = 100.0
        meter = meter_of(CountingMeter, clock)
        # an archive holds every sample, so only since_s keeps the reads short
        meter.forget_before("cpu0", WALL_OFFSET, holder="archive")
        meter.forget_before("dram0", WALL_OFFSET, holder="archive")
        for _ in range(int(history_s * 4)):
            clock.advance(0.25)
            meter.sample_now()
        per_settle: list[int] = []

        def count(m: CountingMeter = meter, out: list[int] = per_settle) -> None:
            out.append(m.copied)
            m.copied = 0

        serve(clock, [meter], 120, after_settle=count)
        assert len(meter.timeline("cpu0")[0]) > history_s * 4  # nothing was forgotten
        costs[history_s] = per_settle[1:]  # the first settle reads everything, once
    assert costs[100.0] == costs[1000.0]  # the same requests cost the same copies
    assert max(costs[1000.0]) <= 2 * (4 * 8 + 2 + 6)  # longest request + a settle's samples


def test_trimming_keeps_open_windows_exact_and_memory_bounded(clock: ManualClock) -> None:
    served = meter_of(Meter, clock, window=True)
    reference = meter_of(FullCopyMeter, clock, window=True)
    lengths: list[int] = []
    rms = serve(
        clock, [served, reference], 900,
        after_settle=lambda: lengths.append(len(served.timeline("cpu0")[0])),
    )  # fmt: skip
    assert len(reference.timeline("cpu0")[0]) == 3601
    assert max(lengths[10:]) <= 2 * (4 * 8 + 2 + 6)  # the samples in flight, not the uptime
    window = served.end_window("lifetime")
    expected = reference.end_window("lifetime")
    assert window.total_j == expected.total_j  # bit for bit, across ~100 trims
    for key in ("cpu0", "dram0"):
        (component,) = [c for c in window.components.values() if key in c.devices]
        assert component.devices[key].energy_j == pytest.approx(
            sum(c.devices[key].energy_j for c in expected.components.values() if key in c.devices)
        )
    rm, _ = rms[0]
    rm.close()
    before = len(served.timeline("cpu0")[0])
    clock.advance(60)
    served.sample_now()
    served.forget_before("cpu0", clock() + WALL_OFFSET)  # released: nothing holds it back now
    assert len(served.timeline("cpu0")[0]) == 1 < before


def test_a_long_request_holds_its_samples_until_settled(clock: ManualClock) -> None:
    meter = meter_of(Meter, clock)
    rm, seen = request_meter(meter, clock)
    long = rm.begin("stream")
    for second in range(1, 301):
        clock.advance(1.0)
        meter.sample_now()
        rm.settle()
        if second == 200:
            rm.finish(long)
        if second == 150:  # everything since the stream began is still there
            assert meter.timeline("cpu0")[0][0] <= 100.0 + WALL_OFFSET
    (stream,) = seen
    cpu, dram = PowerTimeline(), PowerTimeline()
    for t, w in WAVE:
        cpu.append(t, w)
    dram.append(0.0, 12.0)
    dram.append(3000.0, 20.0)
    exact = cpu.energy_between(0.0, 200.0) + dram.energy_between(0.0, 200.0)
    assert stream.energy_j == pytest.approx(exact, rel=0.01)  # 1 Hz samples of a 2 s wave
    assert len(meter.timeline("cpu0")[0]) < 10

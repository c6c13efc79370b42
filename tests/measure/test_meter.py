"""Window arithmetic of the Meter over scripted sensors on a manual clock."""

from __future__ import annotations

import logging
import sys
import time
import types
from pathlib import Path

import pytest

from greenml.errors import ConfigError, SensorError, WindowError
from greenml.measure.measurement import COUNTER, ESTIMATED, POWER_INTEGRATED
from greenml.measure.meter import Meter
from greenml.measure.sensors.base import Device, Sensor
from greenml.measure.sensors.fake import FakeDevice, FakeSensor, replay_sensor
from greenml.measure.timeline import PowerTimeline
from greenml.measure.tracking import track
from tests.helpers import ManualClock


def meter_for(devices: list[FakeDevice], clock: ManualClock, **kwargs: object) -> Meter:
    sensor = FakeSensor(devices, clock=clock)
    return Meter(sensors=[sensor], sample_hz=0, clock=clock, wall_clock=lambda: 1.7e9, **kwargs)  # type: ignore[arg-type]


def run_for(meter: Meter, clock: ManualClock, seconds: float, step: float = 1.0) -> None:
    """Advance time, letting the sampler read once per step."""
    elapsed = 0.0
    while elapsed < seconds - 1e-9:
        dt = min(step, seconds - elapsed)
        clock.advance(dt)
        elapsed += dt
        meter.sample_now()


def test_counter_window_is_the_integral_of_the_trace() -> None:
    clock = ManualClock()
    meter = meter_for([FakeDevice("gpu0", [(0, 100), (5, 300)], name="FakeGPU")], clock)
    meter.begin_window("all")
    run_for(meter, clock, 10)
    m = meter.end_window("all")
    # 100 W ramping linearly to 300 W over 5 s, then 300 W for 5 s
    assert m.total_j == pytest.approx(1000 + 1500)
    gpu = m.components["gpu"]
    assert gpu.method == COUNTER
    assert gpu.devices["gpu0"].uncertainty_rel == 0.05
    assert m.duration_s == pytest.approx(10)
    assert m.started_at.tzinfo is not None


def test_nested_and_overlapping_windows() -> None:
    clock = ManualClock()
    meter = meter_for([FakeDevice("gpu0", [(0, 100)])], clock)
    meter.begin_window("outer")
    run_for(meter, clock, 2)
    meter.begin_window("inner")
    run_for(meter, clock, 3)
    meter.begin_window("overlap")
    inner = meter.end_window("inner")
    run_for(meter, clock, 4)
    outer = meter.end_window("outer")
    run_for(meter, clock, 1)
    overlap = meter.end_window("overlap")
    assert inner.total_j == pytest.approx(300)
    assert outer.total_j == pytest.approx(900)
    assert overlap.total_j == pytest.approx(500)


def test_zero_length_window_is_zero_for_every_method() -> None:
    clock = ManualClock()
    meter = meter_for(
        [FakeDevice("gpu0", [(0, 100)]), FakeDevice("cpu0", [(0, 50)], method=ESTIMATED)], clock
    )
    meter.begin_window("z")
    m = meter.end_window("z")
    assert m.duration_s == 0
    assert m.total_j == 0
    assert m.components["cpu"].method == ESTIMATED


def test_counter_wrap_around_is_unwrapped() -> None:
    clock = ManualClock()
    # the raw counter wraps every ~500 J, i.e. every 5 s at 100 W
    meter = meter_for([FakeDevice("gpu0", [(0, 100)], counter_max_j=499)], clock)
    meter.begin_window("long")
    run_for(meter, clock, 12)
    assert meter.end_window("long").total_j == pytest.approx(1200)


def test_device_without_counter_is_power_integrated() -> None:
    clock = ManualClock()
    meter = meter_for([FakeDevice("gpu0", [(0, 0), (10, 200)], method=POWER_INTEGRATED)], clock)
    meter.begin_window("ramp")
    run_for(meter, clock, 10, step=0.5)
    m = meter.end_window("ramp")
    assert m.total_j == pytest.approx(1000)
    assert m.components["gpu"].method == POWER_INTEGRATED


def test_short_window_without_counter_is_more_uncertain() -> None:
    clock = ManualClock()
    meter = Meter(
        sensors=[
            FakeSensor(
                [FakeDevice("cpu0", [(0, 50)], method=ESTIMATED, uncertainty_rel=0.3)], clock
            )
        ],
        sample_hz=1.0,
        clock=clock,
    )
    meter.close()  # no thread; we drive the samples
    meter.begin_window("short")
    run_for(meter, clock, 0.1)
    short = meter.end_window("short")
    meter.begin_window("long")
    run_for(meter, clock, 100)
    long = meter.end_window("long")
    assert short.components["cpu"].uncertainty_rel > 0.9
    assert 0.3 <= long.components["cpu"].uncertainty_rel < 0.31


def test_lost_gpu_falls_back_to_its_samples_and_is_labelled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ManualClock()
    meter = meter_for(
        [FakeDevice("gpu0", [(0, 100)]), FakeDevice("gpu1", [(0, 100)], lost_at_s=5)], clock
    )
    with caplog.at_level(logging.WARNING, logger="greenml"):
        meter.begin_window("run")
        run_for(meter, clock, 10)
        m = meter.end_window("run")
    gpu1 = m.components["gpu"].devices["gpu1"]
    assert m.components["gpu"].devices["gpu0"].energy_j == pytest.approx(1000)
    assert gpu1.method == POWER_INTEGRATED
    # last good reading at 4 s (lost at 5 s): only the covered part is counted
    assert gpu1.energy_j == pytest.approx(400)
    assert "no readings for 6.0 s of 10.0 s" in gpu1.note
    assert gpu1.uncertainty_rel >= 0.5
    assert m.components["gpu"].method == POWER_INTEGRATED
    assert len([r for r in caplog.records if "gpu1" in r.getMessage()]) == 1


class BrokenSensor(Sensor):
    """A backend with a bug: every read raises something unexpected."""

    @property
    def devices(self) -> list[Device]:
        return [Device("gpu0", "gpu", "broken", COUNTER, 0.05)]

    def read_energy_j(self) -> dict[str, float]:
        raise RuntimeError("driver exploded")

    def read_power_w(self) -> dict[str, float]:
        raise SensorError("no power")


def test_a_broken_sensor_never_raises_into_the_program() -> None:
    clock = ManualClock()
    meter = Meter(sensors=[BrokenSensor()], sample_hz=0, clock=clock)
    meter.begin_window("w")
    run_for(meter, clock, 3)
    m = meter.end_window("w")
    device = m.components["gpu"].devices["gpu0"]
    assert device.energy_j == 0
    assert device.uncertainty_rel == 1.0
    assert device.note == "no power reading in this window"


def test_window_misuse_is_a_clear_error() -> None:
    meter = meter_for([FakeDevice("gpu0", [(0, 1)])], ManualClock())
    meter.begin_window("a")
    with pytest.raises(WindowError, match="already open"):
        meter.begin_window("a")
    with pytest.raises(WindowError, match="not begun"):
        meter.end_window("b")


def test_context_manager_measures_even_when_the_block_raises() -> None:
    clock = ManualClock()
    meter = meter_for([FakeDevice("gpu0", [(0, 10)])], clock)
    with pytest.raises(ZeroDivisionError), meter.window("epoch") as w:
        clock.advance(2)
        _ = 1 / 0
    assert w.measurement is not None
    assert w.measurement.total_j == pytest.approx(20)


def test_track_decorator_gives_each_call_its_own_window() -> None:
    clock = ManualClock()
    meter = meter_for([FakeDevice("gpu0", [(0, 10)])], clock)
    seen: list[float] = []

    @track(meter=meter, on_measurement=lambda m: seen.append(m.total_j))
    def work(depth: int) -> int:
        clock.advance(1)
        return depth if depth == 0 else work(depth - 1) + 1

    assert work(2) == 2
    assert seen == pytest.approx([10, 20, 30])  # innermost call ends first
    assert work.last_measurement.name.endswith("work")  # type: ignore[attr-defined]


def test_samples_are_recorded_for_the_store() -> None:
    clock = ManualClock()
    meter = meter_for(
        [FakeDevice("gpu0", [(0, 10)], metrics={"utilization": 0.5})], clock, record_samples=True
    )
    run_for(meter, clock, 3)
    samples = meter.drain_samples()
    assert [s.power_w for s in samples] == [10, 10, 10, 10]
    assert samples[-1].metrics == {"utilization": 0.5}
    assert samples[1].time_s - samples[0].time_s == pytest.approx(1)
    assert meter.drain_samples() == []


def test_cuda_sync_happens_before_the_timestamp(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = ManualClock()
    meter = meter_for([FakeDevice("gpu0", [(0, 100)])], clock)
    # a fake torch whose synchronize waits 2 s for queued kernels
    cuda = types.SimpleNamespace(is_initialized=lambda: True, synchronize=lambda: clock.advance(2))
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    meter.begin_window("step")
    clock.advance(1)
    m = meter.end_window("step")
    assert m.duration_s == pytest.approx(3)  # the queued work is inside the window
    unsynced = meter_for([FakeDevice("gpu0", [(0, 100)])], clock, sync_cuda=False)
    unsynced.begin_window("step")
    clock.advance(1)
    assert unsynced.end_window("step").duration_s == pytest.approx(1)


def test_background_sampler_records_and_stops() -> None:
    sensor = FakeSensor([FakeDevice("gpu0", [(0, 42)], method=POWER_INTEGRATED)])
    meter = Meter(sensors=[sensor], sample_hz=50)
    time.sleep(0.3)
    meter.close()
    times, powers = meter.timeline("gpu0")
    assert len(times) >= 5
    assert set(powers) == {42}
    count = len(times)
    time.sleep(0.1)
    assert len(meter.timeline("gpu0")[0]) == count


def test_replay_sensor_reads_a_trace(tmp_path: Path) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text("time_s,device,power_w\n0,gpu0,100\n10,gpu0,100\n0,cpu0,20\n")
    clock = ManualClock()
    meter = Meter(sensors=[replay_sensor(trace, clock=clock)], sample_hz=0, clock=clock)
    meter.begin_window("w")
    run_for(meter, clock, 10)
    m = meter.end_window("w")
    assert m.energy_of("gpu") == pytest.approx(1000)
    assert m.energy_of("cpu") == pytest.approx(200)
    bad = tmp_path / "bad.csv"
    bad.write_text("time_s,device,power_w\n0,gpu0,lots\n")
    with pytest.raises(ConfigError, match=r"bad.csv:2"):
        replay_sensor(bad)


# ----------------------------------------------------------- incremental timelines


WAVE = [(float(t), 100.0 + (t * 53 % 17) * 11.0) for t in range(0, 400, 3)]  # W, uneven


def test_timeline_since_returns_the_sample_before_and_the_rest() -> None:
    clock = ManualClock()
    meter = meter_for([FakeDevice("cpu0", WAVE, method=POWER_INTEGRATED)], clock)
    run_for(meter, clock, 20)
    times, powers = meter.timeline("cpu0")
    since = times[7] + 0.4
    part_t, part_p = meter.timeline("cpu0", since)
    assert part_t == times[7:] and part_p == powers[7:]
    # at a sample's own time: the one before it too (a µs of margin for the clock offset)
    assert meter.timeline("cpu0", times[7]) == (times[6:], powers[6:])
    assert meter.timeline("cpu0", times[0] - 100) == (times, powers)


def test_forget_before_keeps_open_windows_exact_and_memory_bounded() -> None:
    clock = ManualClock()
    trimmed = meter_for([FakeDevice("cpu0", WAVE, method=POWER_INTEGRATED)], clock)
    kept = meter_for([FakeDevice("cpu0", WAVE, method=POWER_INTEGRATED)], clock)
    clock.advance(0.5)  # the windows start between two samples
    for meter in (trimmed, kept):
        meter.begin_window("run")
    lengths = []
    for step in range(300):
        clock.advance(1.0)
        trimmed.sample_now()
        kept.sample_now()
        if step == 100:
            for meter in (trimmed, kept):
                meter.begin_window("late")
            clock.advance(0.25)
        trimmed.forget_before("cpu0", clock() + (1.7e9 - 1000.0) - 5.0)  # Unix: now - 5 s
        lengths.append(len(trimmed.timeline("cpu0")[0]))
    late, run = trimmed.end_window("late"), trimmed.end_window("run")
    assert late.total_j == kept.end_window("late").total_j  # bit for bit
    assert run.total_j == kept.end_window("run").total_j
    trace = PowerTimeline()
    for t, w in WAVE:
        trace.append(t, w)
    assert run.total_j == pytest.approx(trace.energy_between(0.5, 300.75), rel=0.01)
    assert len(kept.timeline("cpu0")[0]) == 301
    assert max(lengths[20:]) <= 2 * 6 + 2  # 5 s needed at 1 Hz, dropped in halves


def test_forget_before_pins_a_counter_window_that_falls_back_to_samples() -> None:
    clock = ManualClock()
    meter = meter_for(
        [FakeDevice("gpu0", [(0, 100)]), FakeDevice("gpu1", [(0, 100)], lost_at_s=5)], clock
    )
    meter.begin_window("run")
    for _ in range(30):
        run_for(meter, clock, 1)
        for key in ("gpu0", "gpu1"):
            meter.forget_before(key, clock() + (1.7e9 - 1000.0))
    assert len(meter.timeline("gpu0")[0]) <= 3
    gpu1 = meter.end_window("run").components["gpu"].devices["gpu1"]
    assert gpu1.energy_j == pytest.approx(400)  # readings up to 4 s, as without forgetting
    assert "no readings for 26.0 s of 30.0 s" in gpu1.note


def test_forget_before_respects_every_holder_until_released() -> None:
    clock = ManualClock()
    meter = meter_for([FakeDevice("cpu0", WAVE, method=POWER_INTEGRATED)], clock)
    run_for(meter, clock, 100)
    unix = 1.7e9 - 1000.0  # Unix time of ManualClock() == 0
    assert meter.forget_before("cpu0", unix + 1060.0, holder="archive") == 60
    assert meter.forget_before("cpu0", unix + 1095.0, holder="server") == 0  # archive holds
    assert meter.timeline("cpu0")[0][0] == unix + 1060.0
    meter.release("archive")
    assert meter.forget_before("cpu0", unix + 1098.0) == 35  # a one-off call: server's mark
    assert meter.timeline("cpu0")[0][0] == unix + 1095.0
    meter.release("server")
    meter.release("never-seen")
    assert meter.forget_before("cpu0", unix + 1200.0) == 5  # the future: stops at the last sample
    assert meter.timeline("cpu0")[0] == [unix + 1100.0]
    with pytest.raises(ConfigError, match="finite"):
        meter.forget_before("cpu0", float("nan"))

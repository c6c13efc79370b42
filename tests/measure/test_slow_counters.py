"""A counter that is slow to read (NVML on an H100: 4.7 ms a call) stays off the window edges.

The sensor below behaves as the H100 did in benchmarks/gpu/meter_vs_counter.py: its
counter moves every 100 ms at a steady 300 W, and every read costs 3 ms.
"""

from __future__ import annotations

import time

from greenml.measure.measurement import COUNTER
from greenml.measure.meter import Meter
from greenml.measure.sensors.base import Device, Sensor
from greenml.measure.slow_counters import edge_uncertainty_rel

POWER_W = 300.0
UPDATE_S = 0.1


class SlowCounterGpu(Sensor):
    """A GPU counter that updates every 100 ms and costs ``read_s`` per read."""

    def __init__(self, read_s: float) -> None:
        self.read_s = read_s
        self.reads = 0
        self._t0 = time.monotonic()
        self._device = Device("gpu0", "gpu", "slow-counter GPU", COUNTER, 0.05)

    @property
    def devices(self) -> list[Device]:
        return [self._device]

    def read_energy_j(self) -> dict[str, float]:
        self.reads += 1
        time.sleep(self.read_s)
        elapsed = time.monotonic() - self._t0
        return {"gpu0": POWER_W * UPDATE_S * int(elapsed / UPDATE_S)}

    def read_power_w(self) -> dict[str, float]:
        return {"gpu0": POWER_W}


def test_a_window_edge_does_not_pay_for_a_slow_counter_read() -> None:
    sensor = SlowCounterGpu(read_s=0.003)
    meter = Meter(sensors=[sensor], cpu=False, sample_hz=10)
    try:
        time.sleep(0.25)  # the sampler has two readings to take a rate from
        reads_before = sensor.reads
        started = time.perf_counter()
        for i in range(200):
            meter.begin_window(f"w{i}", sync_execution=False)
            meter.end_window(f"w{i}", sync_execution=False)
        per_pair_s = (time.perf_counter() - started) / 200
    finally:
        meter.close()
    assert per_pair_s < 0.003  # one synchronous read alone would cost 3 ms per edge
    assert sensor.reads - reads_before < 200  # only the reader thread reads the device
    assert any("energy-counter read costs" in note for note in meter.notes)


def test_windows_from_sampled_readings_add_up_and_are_never_negative() -> None:
    meter = Meter(sensors=[SlowCounterGpu(read_s=0.001)], cpu=False, sample_hz=20)
    try:
        time.sleep(0.15)
        meter.begin_window("whole", sync_execution=False)
        parts = []
        for i in range(8):
            meter.begin_window(f"p{i}", sync_execution=False)
            time.sleep(0.06)
            parts.append(meter.end_window(f"p{i}", sync_execution=False))
        whole = meter.end_window("whole", sync_execution=False)
    finally:
        meter.close()
    energies = [p.components["gpu"].devices["gpu0"].energy_j for p in parts]
    assert all(e >= 0 for e in energies)
    total = whole.components["gpu"].devices["gpu0"].energy_j
    # nested windows' edges are read at slightly different instants; the sum of the
    # parts and the whole agree to the energy of that gap, well under one counter step
    assert abs(sum(energies) - total) < POWER_W * UPDATE_S
    # about 300 W over ~0.5 s, within a counter step at each end
    assert abs(total - POWER_W * whole.duration_s) <= 2 * POWER_W * UPDATE_S + 1e-9


def test_a_window_shorter_than_the_counter_step_says_so_in_its_uncertainty() -> None:
    meter = Meter(sensors=[SlowCounterGpu(read_s=0.001)], cpu=False, sample_hz=10)
    try:
        time.sleep(0.15)
        with meter.window("short", sync_execution=False) as short:
            time.sleep(0.02)
    finally:
        meter.close()
    assert short.measurement is not None
    device = short.measurement.components["gpu"].devices["gpu0"]
    assert device.uncertainty_rel > 1.0  # a 20 ms window is below what the counter resolves
    assert edge_uncertainty_rel(0.05, 10.0) < 0.06  # a 10 s window barely widens


def test_a_meter_without_a_sampler_still_keeps_slow_reads_off_the_edges() -> None:
    sensor = SlowCounterGpu(read_s=0.003)
    meter = Meter(sensors=[sensor], cpu=False, sample_hz=0)
    try:
        time.sleep(0.25)
        started = time.perf_counter()
        for i in range(100):
            with meter.window(f"w{i}", sync_execution=False):
                pass
        per_pair_s = (time.perf_counter() - started) / 100
    finally:
        meter.close()
    assert per_pair_s < 0.003


def test_a_fast_counter_is_still_read_at_the_edge() -> None:
    sensor = SlowCounterGpu(read_s=0.0)
    meter = Meter(sensors=[sensor], cpu=False, sample_hz=10)
    try:
        before = sensor.reads
        with meter.window("w", sync_execution=False) as w:
            pass
    finally:
        meter.close()
    assert sensor.reads - before >= 2
    assert w.measurement is not None
    assert w.measurement.components["gpu"].devices["gpu0"].uncertainty_rel == 0.05


def test_exact_edges_read_the_counter_at_the_edge_whatever_it_costs() -> None:
    sensor = SlowCounterGpu(read_s=0.002)
    meter = Meter(sensors=[sensor], cpu=False, sample_hz=0, exact_edges=True)
    try:
        before = sensor.reads
        with meter.window("w", sync_execution=False) as w:
            time.sleep(0.01)
    finally:
        meter.close()
    assert sensor.reads - before == 2
    assert w.measurement is not None
    assert w.measurement.components["gpu"].devices["gpu0"].uncertainty_rel == 0.05

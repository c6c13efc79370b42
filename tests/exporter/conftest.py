"""Fixtures: a Meter over 8 fake GPUs and a CPU, with gauges."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from greenml.measure.measurement import POWER_INTEGRATED
from greenml.measure.meter import Meter
from greenml.measure.sensors.fake import FakeDevice, FakeSensor

GIB = 1024**3


def fake_devices() -> list[FakeDevice]:
    """8 GPUs (gpu7 idle holding memory, gpu6 low SM activity) and a CPU."""
    gpus = []
    for i in range(8):
        metrics = {"utilization": 0.95, "sm_activity": 0.6, "memory_used_bytes": 40 * GIB}
        if i == 6:
            metrics["sm_activity"] = 0.08
        if i == 7:
            metrics = {"utilization": 0.0, "sm_activity": 0.0, "memory_used_bytes": 20 * GIB}
        gpus.append(FakeDevice(f"gpu{i}", [(0.0, 300.0 + i)], name="Fake H100", metrics=metrics))
    cpu = FakeDevice("cpu0", [(0.0, 100.0)], method=POWER_INTEGRATED, metrics={"utilization": 0.3})
    return [*gpus, cpu]


def make_fake_meter(clock: object = None) -> Meter:
    """A Meter over the fake devices that samples only when told."""
    return Meter(sensors=[FakeSensor(fake_devices())], sample_hz=0, record_samples=True)


@pytest.fixture
def fake_meter() -> Iterator[Meter]:
    meter = make_fake_meter()
    yield meter
    meter.close()

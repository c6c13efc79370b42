"""Sensors for the Ray nodes of tests/integrations/test_ray.py (importable by Ray workers)."""

from __future__ import annotations

from greenml.measure.sensors.base import Sensor
from greenml.measure.sensors.fake import FakeDevice, FakeSensor

GPU_W = 200.0


def node_sensors() -> list[Sensor]:
    """One fake GPU at a constant 200 W with an energy counter."""
    return [FakeSensor([FakeDevice("gpu0", [(0.0, GPU_W)], name="Fake H100")])]

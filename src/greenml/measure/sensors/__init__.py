"""Sensors the Meter reads: NVML GPUs, RAPL, the CPU model, process trees and fakes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

_LAZY = {
    "Device": "greenml.measure.sensors.base",
    "Sensor": "greenml.measure.sensors.base",
    "discover_sensors": "greenml.measure.sensors.discover",
    "FakeSensor": "greenml.measure.sensors.fake",
}

__all__ = [
    "Device",
    "FakeSensor",
    "Sensor",
    "discover_sensors",
]

if TYPE_CHECKING:
    from greenml.measure.sensors.base import Device, Sensor
    from greenml.measure.sensors.discover import discover_sensors
    from greenml.measure.sensors.fake import FakeSensor


__getattr__ = lazy_exports(__name__, _LAZY)

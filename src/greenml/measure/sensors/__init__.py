"""Sensors the Meter reads: NVML GPUs, RAPL, the CPU model, process trees and fakes."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

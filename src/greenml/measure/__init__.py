"""Measuring: the Meter, measurements, power timelines, sensors and the events channel."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "Meter": "greenml.measure.meter",
    "Measurement": "greenml.measure.measurement",
    "track": "greenml.measure.tracking",
    "progress": "greenml.measure.events",
}

__all__ = [
    "Measurement",
    "Meter",
    "progress",
    "track",
]

if TYPE_CHECKING:
    from greenml.measure.events import progress
    from greenml.measure.measurement import Measurement
    from greenml.measure.meter import Meter
    from greenml.measure.tracking import track


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

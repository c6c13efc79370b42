"""Measuring: the Meter, measurements, power timelines, sensors and the events channel."""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

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


__getattr__ = lazy_exports(__name__, _LAZY)

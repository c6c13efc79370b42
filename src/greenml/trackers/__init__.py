"""Experiment-tracker sinks: a run's energy, power, carbon and cost in MLflow, W&B, TensorBoard.

A :class:`~greenml.trackers.base.Sink` receives finished windows as
:class:`~greenml.trackers.base.WindowMetrics` (batched, from the run's
background thread) and, at the end, the run record and its impact statement.
Each tracker's package is imported only when its sink is made
(:func:`~greenml.trackers.factory.make_sinks`); a missing one names its extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

_LAZY = {
    "Sink": "greenml.trackers.base",
    "WindowMetrics": "greenml.trackers.base",
    "make_sinks": "greenml.trackers.factory",
}

__all__ = ["Sink", "WindowMetrics", "make_sinks"]

if TYPE_CHECKING:
    from greenml.trackers.base import Sink, WindowMetrics
    from greenml.trackers.factory import make_sinks


__getattr__ = lazy_exports(__name__, _LAZY)

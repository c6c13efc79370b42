"""Advisors that cut training energy: GPU power limits, batch size, software knobs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

_LAZY = {
    "PowerLimitOptimizer": "greenml.optimize.power_limit",
    "BatchSizeOptimizer": "greenml.optimize.batch_size",
    "GpuControl": "greenml.optimize.gpu_control",
}

__all__ = [
    "BatchSizeOptimizer",
    "GpuControl",
    "PowerLimitOptimizer",
]

if TYPE_CHECKING:
    from greenml.optimize.batch_size import BatchSizeOptimizer
    from greenml.optimize.gpu_control import GpuControl
    from greenml.optimize.power_limit import PowerLimitOptimizer


__getattr__ = lazy_exports(__name__, _LAZY)

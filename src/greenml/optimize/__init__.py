"""Advisors that cut training energy: GPU power limits, batch size, software knobs."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

"""Straggler-aware GPU power: the planner, its runtime controller and a simulator."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "StragglerPlanner": "greenml.optimize.straggler.planner",
    "StragglerPowerController": "greenml.optimize.straggler.runtime",
}

__all__ = [
    "StragglerPlanner",
    "StragglerPowerController",
]

if TYPE_CHECKING:
    from greenml.optimize.straggler.planner import StragglerPlanner
    from greenml.optimize.straggler.runtime import StragglerPowerController


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

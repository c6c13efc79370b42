"""Straggler-aware GPU power: the planner, its runtime controller and a simulator."""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

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


__getattr__ = lazy_exports(__name__, _LAZY)

"""The software-knob sweep: precision, batch size, compile and loader workers, each measured."""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

_LAZY = {
    "TrainStep": "greenml.optimize.sweep.run",
    "sweep": "greenml.optimize.sweep.run",
    "SweepConfig": "greenml.optimize.sweep.grid",
    "SweepGrid": "greenml.optimize.sweep.grid",
    "grad_scaler": "greenml.optimize.sweep.knobs",
}

__all__ = [
    "SweepConfig",
    "SweepGrid",
    "TrainStep",
    "grad_scaler",
    "sweep",
]

if TYPE_CHECKING:
    from greenml.optimize.sweep.grid import SweepConfig, SweepGrid
    from greenml.optimize.sweep.knobs import grad_scaler
    from greenml.optimize.sweep.run import TrainStep, sweep


__getattr__ = lazy_exports(__name__, _LAZY)

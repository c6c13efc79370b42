"""Estimating energy before or without a run: the offline estimator and its inputs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

_LAZY = {
    "Estimate": "greenml.estimation.estimator",
    "estimate": "greenml.estimation.estimator",
}

__all__ = [
    "Estimate",
    "estimate",
]

if TYPE_CHECKING:
    from greenml.estimation.estimator import Estimate, estimate


__getattr__ = lazy_exports(__name__, _LAZY)

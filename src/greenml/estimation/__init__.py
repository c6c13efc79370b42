"""Estimating energy before or without a run: the offline estimator and its inputs."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

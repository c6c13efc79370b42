"""Preemption-safe training: checkpoints, interruption signals, interval policy."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "Checkpointer": "greenml.resilience.checkpointer",
    "resilient_steps": "greenml.resilience.loop",
    "Interrupts": "greenml.resilience.session",
    "Adaptive": "greenml.resilience.policy",
    "FixedInterval": "greenml.resilience.policy",
    "YoungDaly": "greenml.resilience.policy",
}

__all__ = [
    "Adaptive",
    "Checkpointer",
    "FixedInterval",
    "Interrupts",
    "YoungDaly",
    "resilient_steps",
]

if TYPE_CHECKING:
    from greenml.resilience.checkpointer import Checkpointer
    from greenml.resilience.loop import resilient_steps
    from greenml.resilience.policy import Adaptive, FixedInterval, YoungDaly
    from greenml.resilience.session import Interrupts


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

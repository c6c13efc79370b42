"""Preemption-safe training: checkpoints, interruption signals, interval policy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

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


__getattr__ = lazy_exports(__name__, _LAZY)

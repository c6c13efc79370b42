"""Replaying carbon-aware scheduling on a trace (Wiesner et al., Let's Wait Awhile)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "replay": "greenml.schedule.replay.run",
    "replay_trace": "greenml.schedule.replay.run",
}

__all__ = [
    "replay",
    "replay_trace",
]

if TYPE_CHECKING:
    from greenml.schedule.replay.run import replay, replay_trace


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

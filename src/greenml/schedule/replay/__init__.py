"""Replaying carbon-aware scheduling on a trace (Wiesner et al., Let's Wait Awhile)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

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


__getattr__ = lazy_exports(__name__, _LAZY)

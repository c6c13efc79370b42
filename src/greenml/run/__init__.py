"""Running a command under measurement: the runner, recorder, spool and what persists a run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

_LAZY = {
    "RunOptions": "greenml.run.runner",
    "RunResult": "greenml.run.runner",
    "run_measured": "greenml.run.runner",
}

__all__ = [
    "RunOptions",
    "RunResult",
    "run_measured",
]

if TYPE_CHECKING:
    from greenml.run.runner import RunOptions, RunResult, run_measured


__getattr__ = lazy_exports(__name__, _LAZY)

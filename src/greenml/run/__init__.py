"""Running a command under measurement: the runner, recorder, spool and what persists a run."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

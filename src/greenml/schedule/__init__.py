"""When and where to run: carbon- and cost-aware planning, forecasts, spot planning."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "Job": "greenml.schedule.job",
    "plan_job": "greenml.schedule.planner",
    "plan_spot": "greenml.schedule.spot_plan",
}

__all__ = [
    "Job",
    "plan_job",
    "plan_spot",
]

if TYPE_CHECKING:
    from greenml.schedule.job import Job
    from greenml.schedule.planner import plan_job
    from greenml.schedule.spot_plan import plan_spot


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

"""When and where to run: carbon- and cost-aware planning, forecasts, spot planning."""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

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


__getattr__ = lazy_exports(__name__, _LAZY)

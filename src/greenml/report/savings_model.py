"""The figures of a savings report: one metric's saving, the payback, the scaling context."""

from __future__ import annotations

import math
from dataclasses import dataclass

from greenml.report.compare import Change, Estimate, Metric


@dataclass(frozen=True)
class Saving:
    """One metric's saving per unit of work (or per run), in base units (J, g, USD)."""

    metric: Metric
    baseline: Estimate
    optimized: Estimate
    change: Change

    @property
    def value(self) -> float:
        return self.baseline.value - self.optimized.value

    @property
    def uncertainty(self) -> float:
        return math.hypot(self.baseline.uncertainty, self.optimized.uncertainty)

    @property
    def rel(self) -> float:
        """The saving as a share of the baseline (negative: the optimized runs use more)."""
        return -self.change.change_rel

    @property
    def significant(self) -> bool:
        return self.change.significant


@dataclass(frozen=True)
class Payback:
    """Months until the yearly $ saving repays the effort; ``None`` when it never does."""

    effort_usd: float
    months: float | None
    uncertainty_months: float | None


@dataclass(frozen=True)
class Context:
    """What the figures are scaled by: unit of work, work per run, runs a year, effort."""

    unit: str | None
    work_per_run: float
    runs_per_year: float | None
    effort_hours: float | None
    hourly_rate_usd: float | None

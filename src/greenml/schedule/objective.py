"""What the planner minimises: carbon, a carbon/cost blend, or carbon under a cost cap.

- ``carbon_weight`` w: minimise w·carbon/C + (1 − w)·cost/K, where C and K are
  the time-weighted mean intensity and mean absolute price over the whole
  allowed span, pooled over the candidates (so both terms are about 1 and w
  reads as a share; prices may be negative, hence the absolute value).
- ``max_cost_increase`` X: least carbon among the plans whose cost is at most
  the baseline's (start at the earliest start, in the first candidate) plus
  X × |baseline cost|. The baseline meets the cap, so a plan always exists.

Both terms are integrals of step series over the job's time, so a blend is
itself a step series (:func:`blend`), and the cap is met exactly for
contiguous windows (every candidate is evaluated) and by a Lagrangian search
over λ in carbon/C + λ·cost/K for interruptible jobs (:func:`under_cap`).

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from greenml.accounting.series import StepSeries
from greenml.errors import ConfigError

T = TypeVar("T")
_BISECTIONS = 14


@dataclass(frozen=True)
class Objective:
    """How carbon and cost are traded.

    Attributes:
        carbon_weight: w in [0, 1]; 1 = carbon only, 0 = cost only.
        max_cost_increase: X ≥ 0 (0.1 = +10 %): least carbon with cost ≤
            baseline + X·|baseline|; excludes a weight below 1.

    Raises:
        ConfigError: A weight outside [0, 1], a negative cap, or both given.
    """

    carbon_weight: float = 1.0
    max_cost_increase: float | None = None

    def __post_init__(self) -> None:
        w = self.carbon_weight
        if math.isnan(w) or not 0.0 <= w <= 1.0:
            raise ConfigError(f"the carbon weight must be between 0 and 1, got {w}")
        cap = self.max_cost_increase
        if cap is not None:
            if math.isnan(cap) or cap < 0:
                raise ConfigError(f"the maximum cost increase must be ≥ 0 %, got {cap * 100:g} %")
            if w < 1.0:
                raise ConfigError("give a carbon weight or a maximum cost increase, not both")

    @property
    def needs_prices(self) -> bool:
        """Whether cost enters the choice (a weight below 1 or a cap)."""
        return self.carbon_weight < 1.0 or self.max_cost_increase is not None

    def describe(self) -> str:
        """One line for the plan's output."""
        if self.max_cost_increase is not None:
            return f"least carbon with cost ≤ baseline + {self.max_cost_increase * 100:g} %"
        if self.carbon_weight == 1.0:
            return "least carbon"
        if self.carbon_weight == 0.0:
            return "least cost"
        w = self.carbon_weight
        return f"weighted: {w:g} × carbon + {1 - w:g} × cost (each relative to its mean)"


def blend(
    intensity: StepSeries, price: StepSeries | None, carbon_w: float, price_w: float,
    start_s: float, end_s: float,
) -> StepSeries:  # fmt: skip
    """carbon_w·intensity + price_w·price on the union of both grids over [start_s, end_s].

    The scales (÷C, ÷K) are folded into the weights by the caller.
    """
    import numpy as np

    if price is None or price_w == 0.0:
        if carbon_w == 1.0:
            return intensity
        return StepSeries(intensity.times_s, intensity.values * carbon_w, intensity.last_step_s,
                          "score")  # fmt: skip
    grids = [s.times_s[(s.times_s > start_s) & (s.times_s < end_s)] for s in (intensity, price)]
    times = np.unique(np.concatenate([[start_s], *grids]))
    values = carbon_w * _values_at(intensity, times) + price_w * _values_at(price, times)
    return StepSeries(times, values, end_s - float(times[-1]), "score")


def _values_at(series: StepSeries, times: Any) -> Any:
    import numpy as np

    index = np.clip(np.searchsorted(series.times_s, times, side="right") - 1, 0, None)
    return series.values[index]


def cost_cap(baseline_cost: float, max_increase: float) -> float:
    """The most a plan may cost: baseline + X·|baseline| (works for negative prices too)."""
    return baseline_cost + max_increase * abs(baseline_cost)


def under_cap(
    solve: Callable[[float], T],
    carbon_of: Callable[[T], float],
    cost_of: Callable[[T], float],
    cap: float,
) -> T | None:
    """The least-carbon solution found with cost ≤ cap, by bisection on λ.

    ``solve(λ)`` minimises carbon/C + λ·cost/K. λ = 0 gives least carbon; if
    that costs too much, λ is doubled until a solution meets the cap and then
    bisected; the feasible solution of least carbon seen is returned, or
    ``None`` when even a cost-dominated solution exceeds the cap.
    """
    first = solve(0.0)
    if cost_of(first) <= cap:
        return first
    low, high = 0.0, 1.0
    best: T | None = None
    for _ in range(20):
        candidate = solve(high)
        if cost_of(candidate) <= cap:
            best = candidate
            break
        low, high = high, high * 4.0
    if best is None:
        return None
    for _ in range(_BISECTIONS):
        mid = 0.5 * (low + high)
        candidate = solve(mid)
        if cost_of(candidate) <= cap:
            high = mid
            if carbon_of(candidate) < carbon_of(best):
                best = candidate
        else:
            low = mid
    return best

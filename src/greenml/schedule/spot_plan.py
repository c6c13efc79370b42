"""Spot, on-demand or a hybrid: the cheapest strategy that meets the deadline.

Each strategy is simulated (see :mod:`greenml.schedule.spot_model`) with
checkpoints at Daly's interval for the job's checkpoint cost and the
interruption rate; the hybrid runs on spot and moves to on-demand when the
time left no longer covers the remaining work with a margin.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from greenml.errors import ConfigError
from greenml.resilience.interval import daly_interval_s, young_interval_s
from greenml.resilience.policy import FixedInterval, YoungDaly
from greenml.schedule.spot_model import (
    Outcome,
    RateSchedule,
    SpotJob,
    on_demand_outcome,
    simulate,
)


@dataclass(frozen=True)
class SpotPlan:
    """The strategies compared and the one recommended."""

    job: SpotJob
    rates: RateSchedule
    rate_source: str
    deadline_s: float | None
    confidence: float
    young_interval_s: float
    daly_interval_s: float
    outcomes: tuple[Outcome, ...]
    recommended: str
    reason: str
    rates_by_region: tuple[dict[str, Any], ...] = ()

    def outcome(self, strategy: str) -> Outcome:
        return next(o for o in self.outcomes if o.strategy == strategy)

    def to_dict(self) -> dict[str, Any]:
        return {
            "work_s": self.job.work_s,
            "checkpoint_cost_s": self.job.checkpoint_cost_s,
            "restart_cost_s": self.job.restart_cost_s,
            "notice_s": self.job.notice_s,
            "interruptions_per_hour": self.rates.per_hour,
            "weekend_factor": self.rates.weekend_factor,
            "rate_source": self.rate_source,
            "rates_by_region": list(self.rates_by_region),
            "start": self.rates.start.isoformat(),
            "deadline_s": self.deadline_s,
            "confidence": self.confidence,
            "checkpoint_interval_s": {
                "young": self.young_interval_s,
                "daly": self.daly_interval_s,
            },
            "strategies": [o.to_dict(self.deadline_s) for o in self.outcomes],
            "recommended": self.recommended,
            "reason": self.reason,
        }


def plan_spot(
    job: SpotJob,
    *,
    interruptions_per_hour: float,
    spot_usd_per_h: float,
    on_demand_usd_per_h: float,
    start: datetime,
    weekend_factor: float = 1.0,
    rate_source: str = "given",
    rates_by_region: Sequence[dict[str, Any]] = (),
    deadline_s: float | None = None,
    confidence: float = 0.95,
    trials: int = 2000,
    seed: int = 0,
) -> SpotPlan:
    """Simulate spot, hybrid and on-demand; recommend the cheapest that is on time.

    ``rates_by_region`` records which rate each candidate region has and where
    it came from (the simulation uses ``interruptions_per_hour``).

    Raises:
        ConfigError: The deadline is shorter than the work itself, or a
            price, rate or confidence is out of range.
    """
    if deadline_s is not None and deadline_s < job.work_s:
        raise ConfigError(
            f"the deadline ({deadline_s / 3600:.2f} h) is shorter than the work itself; "
            f"the earliest feasible deadline is {job.work_s / 3600:.2f} h after the start"
        )
    if spot_usd_per_h < 0 or on_demand_usd_per_h < 0:
        raise ConfigError("prices must be >= 0 per hour")
    if not 0 < confidence <= 1:
        raise ConfigError(f"confidence must be in (0, 1], not {confidence}")
    rates = RateSchedule(interruptions_per_hour, start, weekend_factor)
    mtbf_s = 3600.0 / interruptions_per_hour if interruptions_per_hour > 0 else float("inf")
    young = young_interval_s(job.checkpoint_cost_s, mtbf_s) if mtbf_s < float("inf") else job.work_s
    daly = daly_interval_s(job.checkpoint_cost_s, mtbf_s) if mtbf_s < float("inf") else job.work_s

    def policy() -> YoungDaly | FixedInterval:
        if interruptions_per_hour > 0:
            return YoungDaly(job.checkpoint_cost_s, interruptions_per_hour)
        return FixedInterval(job.work_s)  # no interruptions: one segment, no checkpoint

    common: dict[str, Any] = {
        "spot_usd_per_h": spot_usd_per_h,
        "on_demand_usd_per_h": on_demand_usd_per_h,
        "trials": trials,
        "seed": seed,
    }
    outcomes = [simulate(job, rates, policy, strategy="spot", **common)]
    if deadline_s is not None:
        hybrid = simulate(
            job, rates, policy, fallback_deadline_s=deadline_s, strategy="hybrid", **common
        )
        outcomes.append(hybrid)
    outcomes.append(on_demand_outcome(job, on_demand_usd_per_h))
    recommended, reason = _recommend(outcomes, deadline_s, confidence)
    return SpotPlan(
        job,
        rates,
        rate_source,
        deadline_s,
        confidence,
        young,
        daly,
        tuple(outcomes),
        recommended,
        reason,
        tuple(rates_by_region),
    )


def _recommend(
    outcomes: list[Outcome], deadline_s: float | None, confidence: float
) -> tuple[str, str]:
    on_time = [o for o in outcomes if o.on_time_share(deadline_s) >= confidence]
    best = min(on_time, key=lambda o: o.mean_cost_usd())
    if deadline_s is None:
        return best.strategy, "lowest expected cost (no deadline given)"
    late = [o.strategy for o in outcomes if o not in on_time]
    why = f"lowest expected cost among strategies on time in ≥ {confidence:.0%} of trials"
    if late:
        why += f" ({', '.join(late)} would miss the deadline too often)"
    return best.strategy, why

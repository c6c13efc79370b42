"""Monte Carlo model of a checkpointed job on spot capacity.

Interruptions arrive as a Poisson process whose rate may change by day (fewer
on weekends). The job alternates work segments of the policy's interval and
checkpoints of cost δ; an interruption loses the work since the last durable
checkpoint (unless the notice leaves time for an emergency checkpoint) and
costs a restart. Time and money are counted on every trial; the outcome keeps
their distributions, not only their means.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from greenml.errors import ConfigError
from greenml.resilience.policy import IntervalPolicy

_DAY_S = 86400.0


@dataclass(frozen=True)
class SpotJob:
    """A job to run on spot capacity.

    Attributes:
        work_s: Useful compute the job needs, in seconds.
        checkpoint_cost_s: Time one checkpoint blocks the job (δ).
        restart_cost_s: Time from an interruption to computing again
            (new instance, start-up, reload of the checkpoint); billed.
        notice_s: Warning before an interruption (AWS 120 s, GCP 30 s); when
            it covers δ an emergency checkpoint keeps the work done until then.
    """

    work_s: float
    checkpoint_cost_s: float
    restart_cost_s: float = 300.0
    notice_s: float = 0.0

    def __post_init__(self) -> None:
        for name in ("work_s", "checkpoint_cost_s"):
            value = getattr(self, name)
            if not (value > 0 and math.isfinite(value)):
                raise ConfigError(f"{name.removesuffix('_s').replace('_', ' ')} must be > 0")
        if self.restart_cost_s < 0 or self.notice_s < 0:
            raise ConfigError("restart cost and notice must be >= 0")


@dataclass(frozen=True)
class RateSchedule:
    """Interruptions per hour, lower on weekends, from a start time on."""

    per_hour: float
    start: datetime
    weekend_factor: float = 1.0

    def __post_init__(self) -> None:
        if not (self.per_hour >= 0 and math.isfinite(self.per_hour)):
            raise ConfigError(f"interruption rate must be >= 0 per hour, not {self.per_hour}")

    def per_second_at(self, elapsed_s: float) -> float:
        """The rate per second at ``elapsed_s`` after the start."""
        day = (self.start + timedelta(seconds=elapsed_s)).weekday()
        factor = self.weekend_factor if day >= 5 else 1.0
        return self.per_hour * factor / 3600.0

    def next_interruption(self, elapsed_s: float, exposure: float) -> float:
        """When the cumulative hazard from ``elapsed_s`` reaches ``exposure`` (inf if never).

        The rate is constant within a calendar day, so the hazard is walked
        day by day.
        """
        t = elapsed_s
        start_s = self.start.timestamp()
        for _ in range(3650):
            day_end = (math.floor((start_s + t) / _DAY_S) + 1) * _DAY_S - start_s
            rate = self.per_second_at(t)
            span = day_end - t
            if rate * span >= exposure:
                return t + exposure / rate
            exposure -= rate * span
            t = day_end
        return math.inf


@dataclass(frozen=True)
class TrialResult:
    """One simulated execution."""

    time_s: float
    spot_s: float
    on_demand_s: float
    interruptions: int
    lost_work_s: float


@dataclass(frozen=True)
class Outcome:
    """Distributions over the trials of one strategy."""

    strategy: str
    trials: tuple[TrialResult, ...] = field(repr=False)
    spot_usd_per_h: float
    on_demand_usd_per_h: float

    def _costs(self) -> list[float]:
        return sorted(
            (r.spot_s * self.spot_usd_per_h + r.on_demand_s * self.on_demand_usd_per_h) / 3600.0
            for r in self.trials
        )

    def _times(self) -> list[float]:
        return sorted(r.time_s for r in self.trials)

    def mean_cost_usd(self) -> float:
        costs = self._costs()
        return sum(costs) / len(costs)

    def mean_time_s(self) -> float:
        times = self._times()
        return sum(times) / len(times)

    def cost_quantile_usd(self, q: float) -> float:
        return _quantile(self._costs(), q)

    def time_quantile_s(self, q: float) -> float:
        return _quantile(self._times(), q)

    def mean_interruptions(self) -> float:
        return sum(r.interruptions for r in self.trials) / len(self.trials)

    def mean_lost_work_s(self) -> float:
        return sum(r.lost_work_s for r in self.trials) / len(self.trials)

    def on_time_share(self, deadline_s: float | None) -> float:
        """Share of trials finished by the deadline (1.0 without one)."""
        if deadline_s is None:
            return 1.0
        return sum(r.time_s <= deadline_s for r in self.trials) / len(self.trials)

    def to_dict(self, deadline_s: float | None = None) -> dict[str, object]:
        return {
            "strategy": self.strategy,
            "mean_cost_usd": self.mean_cost_usd(),
            "cost_p50_usd": self.cost_quantile_usd(0.5),
            "cost_p90_usd": self.cost_quantile_usd(0.9),
            "cost_p99_usd": self.cost_quantile_usd(0.99),
            "mean_time_s": self.mean_time_s(),
            "time_p50_s": self.time_quantile_s(0.5),
            "time_p90_s": self.time_quantile_s(0.9),
            "time_p99_s": self.time_quantile_s(0.99),
            "mean_interruptions": self.mean_interruptions(),
            "mean_lost_work_s": self.mean_lost_work_s(),
            "on_time_share": self.on_time_share(deadline_s),
            "trials": len(self.trials),
        }


def _quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile of sorted values."""
    pos = q * (len(values) - 1)
    low = math.floor(pos)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (pos - low)


def simulate_trial(
    job: SpotJob,
    rates: RateSchedule,
    policy: IntervalPolicy,
    uniform: Callable[[], float],
    *,
    fallback_deadline_s: float | None = None,
) -> TrialResult:
    """One execution on spot; with a fallback deadline, switch to on-demand in time.

    The switch happens at a checkpoint boundary once the time left before the
    deadline no longer covers the remaining work, a restart and one more
    checkpoint interval of spot risk.
    """
    t = done = spot_s = lost = 0.0
    interruptions = 0
    next_at = rates.next_interruption(0.0, -math.log(1.0 - uniform()))
    while done < job.work_s:
        remaining = job.work_s - done
        if fallback_deadline_s is not None:
            segment = min(policy.interval_s(), remaining)
            worst = segment + job.checkpoint_cost_s + job.restart_cost_s + remaining
            if t + worst > fallback_deadline_s:
                on_demand = job.restart_cost_s + remaining
                return TrialResult(t + on_demand, spot_s, on_demand, interruptions, lost)
        segment = min(policy.interval_s(), remaining)
        final = segment >= remaining
        needed = segment + (0.0 if final else job.checkpoint_cost_s)
        if next_at >= t + needed:
            t += needed
            spot_s += needed
            done += segment
            policy.record_uptime(needed)
            if not final:
                policy.record_checkpoint(job.checkpoint_cost_s)
            continue
        ran = next_at - t
        saved = 0.0
        if job.notice_s >= job.checkpoint_cost_s:
            saved = min(max(ran - job.notice_s, 0.0), segment)
        done += saved
        lost += ran - saved
        spot_s += ran + job.restart_cost_s
        policy.record_uptime(ran)
        policy.record_interruption()
        interruptions += 1
        t = next_at + job.restart_cost_s
        next_at = rates.next_interruption(t, -math.log(1.0 - uniform()))
    return TrialResult(t, spot_s, 0.0, interruptions, lost)


def simulate(
    job: SpotJob,
    rates: RateSchedule,
    make_policy: Callable[[], IntervalPolicy],
    *,
    spot_usd_per_h: float,
    on_demand_usd_per_h: float,
    trials: int = 2000,
    seed: int = 0,
    fallback_deadline_s: float | None = None,
    strategy: str = "spot",
) -> Outcome:
    """Run ``trials`` executions with a fresh policy each; seeded, reproducible."""
    if trials < 1:
        raise ConfigError(f"trials must be >= 1, not {trials}")
    rng = random.Random(seed)
    results = tuple(
        simulate_trial(
            job, rates, make_policy(), rng.random, fallback_deadline_s=fallback_deadline_s
        )
        for _ in range(trials)
    )
    return Outcome(strategy, results, spot_usd_per_h, on_demand_usd_per_h)


def on_demand_outcome(job: SpotJob, on_demand_usd_per_h: float) -> Outcome:
    """On-demand capacity: no interruptions, no checkpoints needed."""
    run = TrialResult(job.work_s, 0.0, job.work_s, 0, 0.0)
    return Outcome("on-demand", (run,), 0.0, on_demand_usd_per_h)

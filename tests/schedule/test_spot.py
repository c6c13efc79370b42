"""The spot Monte Carlo: interruptions, lost work, notice, hybrid fallback, recommendation."""

from __future__ import annotations

import math
from datetime import datetime, timezone

import pytest

from greenml.errors import ConfigError
from greenml.resilience.policy import FixedInterval, YoungDaly
from greenml.schedule.spot_model import RateSchedule, SpotJob, simulate
from greenml.schedule.spot_plan import plan_spot

MONDAY = datetime(2026, 11, 23, tzinfo=timezone.utc)
PRICES = {"spot_usd_per_h": 1.0, "on_demand_usd_per_h": 3.0}


def test_no_interruptions_costs_work_plus_checkpoints() -> None:
    job = SpotJob(work_s=10 * 3600, checkpoint_cost_s=60)
    out = simulate(job, RateSchedule(0.0, MONDAY), lambda: FixedInterval(3600), trials=5, **PRICES)
    # 10 segments, 9 checkpoints (none after the last one).
    assert out.mean_time_s() == pytest.approx(10 * 3600 + 9 * 60)
    assert out.mean_cost_usd() == pytest.approx((10 * 3600 + 9 * 60) / 3600)
    assert out.mean_interruptions() == 0


def test_interruption_count_follows_the_poisson_rate() -> None:
    job = SpotJob(work_s=100 * 3600, checkpoint_cost_s=30, restart_cost_s=0)
    out = simulate(
        job, RateSchedule(0.05, MONDAY), lambda: FixedInterval(1800), trials=400, seed=1, **PRICES
    )
    # ≈ rate × wall time; wall time ≈ 100 h plus checkpoints and lost work.
    expected = 0.05 * out.mean_time_s() / 3600
    assert out.mean_interruptions() == pytest.approx(expected, rel=0.08)
    # Lost work per interruption ≈ half a segment (uniform arrival in a 30-min segment).
    per_interruption = out.mean_lost_work_s() / out.mean_interruptions()
    assert 700 < per_interruption < 1150


def test_weekends_are_quieter() -> None:
    saturday = datetime(2026, 11, 21, tzinfo=timezone.utc)
    job = SpotJob(work_s=40 * 3600, checkpoint_cost_s=30, restart_cost_s=0)
    make = lambda: FixedInterval(1800)  # noqa: E731
    week = simulate(job, RateSchedule(0.1, MONDAY, 0.4), make, trials=300, **PRICES)
    weekend = simulate(job, RateSchedule(0.1, saturday, 0.4), make, trials=300, **PRICES)
    ratio = weekend.mean_interruptions() / week.mean_interruptions()
    assert ratio == pytest.approx(0.4, rel=0.2)


def test_next_interruption_integrates_the_hazard_across_days() -> None:
    saturday = datetime(2026, 11, 21, tzinfo=timezone.utc)
    rates = RateSchedule(3.6, saturday, weekend_factor=0.5)  # 0.0005/s Sat-Sun, 0.001/s Mon
    # Exposure of two full weekend days (2 × 86400 × 0.0005 = 86.4) plus 10 s of Monday.
    t = rates.next_interruption(0.0, 86.4 + 0.01)
    assert t == pytest.approx(2 * 86400 + 10)


def test_a_notice_that_covers_a_checkpoint_keeps_the_work() -> None:
    kwargs = {"trials": 300, "seed": 3, **PRICES}
    rates = RateSchedule(0.2, MONDAY)
    blind = simulate(
        SpotJob(24 * 3600, 60, 0, notice_s=0), rates, lambda: FixedInterval(3600), **kwargs
    )
    warned = simulate(
        SpotJob(24 * 3600, 60, 0, notice_s=120), rates, lambda: FixedInterval(3600), **kwargs
    )
    assert warned.mean_lost_work_s() < 0.2 * blind.mean_lost_work_s()
    assert warned.mean_time_s() < blind.mean_time_s()


def test_daly_beats_a_fixed_ten_minute_interval_when_checkpoints_are_costly() -> None:
    job = SpotJob(work_s=24 * 3600, checkpoint_cost_s=300, restart_cost_s=300)
    rates = RateSchedule(0.023, MONDAY)
    fixed = simulate(job, rates, lambda: FixedInterval(600), trials=500, **PRICES)
    daly = simulate(job, rates, lambda: YoungDaly(300, 0.023), trials=500, **PRICES)
    assert daly.mean_cost_usd() < 0.8 * fixed.mean_cost_usd()


def test_hybrid_meets_a_tight_deadline_that_plain_spot_misses() -> None:
    plan = plan_spot(
        SpotJob(24 * 3600, 300, 300),
        interruptions_per_hour=0.1,
        start=MONDAY,
        deadline_s=26 * 3600,
        trials=400,
        **PRICES,
    )
    spot, hybrid, on_demand = (plan.outcome(s) for s in ("spot", "hybrid", "on-demand"))
    assert spot.on_time_share(plan.deadline_s) < 0.5
    assert hybrid.on_time_share(plan.deadline_s) >= 0.95
    assert hybrid.mean_cost_usd() < on_demand.mean_cost_usd()
    assert plan.recommended == "hybrid"
    assert "spot" in plan.reason


def test_without_a_deadline_the_cheapest_wins_and_intervals_are_daly_and_young() -> None:
    plan = plan_spot(
        SpotJob(8 * 3600, 120), interruptions_per_hour=0.041, start=MONDAY, trials=200, **PRICES
    )
    assert plan.recommended == "spot"
    assert plan.young_interval_s == pytest.approx(math.sqrt(2 * 120 * 3600 / 0.041))
    assert plan.daly_interval_s < plan.young_interval_s


def test_a_deadline_shorter_than_the_work_names_the_earliest_feasible_one() -> None:
    with pytest.raises(ConfigError, match=r"earliest feasible deadline is 24\.00 h"):
        plan_spot(
            SpotJob(24 * 3600, 60), interruptions_per_hour=0.02, start=MONDAY, deadline_s=3600,
            **PRICES,
        )  # fmt: skip
    with pytest.raises(ConfigError, match="work must be > 0"):
        SpotJob(0, 60)

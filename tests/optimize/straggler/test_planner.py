"""Straggler-aware power planning: the plan, re-planning, and the V100 simulation."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from greenml.errors import ConfigError
from greenml.optimize.objective import LimitProfile
from greenml.optimize.straggler.planner import PowerCurve, StragglerPlanner, plan_power
from greenml.optimize.straggler.sim import SimConfig, simulate, simulate_seeds, v100_curve

SHARED_TRACE = Path(__file__).parents[4] / "shared/data/zeus_traces/summary_power_v100.csv"
# compute time falls and power rises with the limit, like a V100 on ResNet-50
CURVE = PowerCurve(
    (100.0, 150.0, 200.0, 250.0), (2.0, 1.25, 1.08, 1.0), (95.0, 140.0, 180.0, 215.0)
)


def test_curve_interpolates_and_holds_outside() -> None:
    assert CURVE.time_at(175.0) == pytest.approx(1.165)
    assert CURVE.power_at(50.0) == 95.0 and CURVE.time_at(300.0) == 1.0
    assert CURVE.candidates(40.0) == [250.0, 210.0, 170.0, 130.0, 100.0]
    profiles = [LimitProfile(250, 1.0, 215.0), LimitProfile(150, 1.25, 175.0)]
    fitted = PowerCurve.from_profiles(profiles)
    assert fitted.limits_w == (150, 250) and fitted.power_w == (140.0, 215.0)
    with pytest.raises(ConfigError, match="ascending"):
        PowerCurve((200.0, 100.0), (1.0, 2.0), (1.0, 1.0))


def test_critical_rank_keeps_max_and_others_finish_just_in_time() -> None:
    # rank 2 is 20 % slower: at 250 W it takes 1.2 s; the others can slow to ~1.19 s
    plan = plan_power([CURVE] * 3, [1.0, 1.0, 1.2], margin_rel=0.01, step_w=1.0)
    assert plan.critical_rank == 2 and plan.step_compute_s == pytest.approx(1.2)
    assert plan.limits_w[2] == 250.0
    for rank in plan.ranks[:2]:
        assert rank.compute_s <= 1.2 * 0.99
        assert CURVE.time_at(rank.limit_w - 1.0) > 1.2 * 0.99  # the lowest limit that fits
        assert rank.limit_w < 200.0 and rank.compute_energy_j < 215.0


def test_measured_times_calibrate_at_the_limits_in_force() -> None:
    # rank 0 already runs at 150 W and takes 1.25 s: it is not slow, it is throttled
    plan = plan_power([CURVE] * 2, [1.25, 1.1], limits_w=[150.0, 250.0], step_w=1.0)
    assert plan.critical_rank == 1


def test_wait_power_picks_the_least_energy_not_the_lowest_limit() -> None:
    steep = PowerCurve((100.0, 150.0, 250.0), (1.5, 1.1, 1.0), (140.0, 100.0, 200.0))
    lowest = plan_power([steep, steep], [1.0, 2.0], step_w=50.0)
    assert lowest.limits_w[0] == 100.0
    frugal = plan_power([steep, steep], [1.0, 2.0], step_w=50.0, wait_power_w=60.0)
    assert frugal.limits_w[0] == 150.0  # 100 W computes longer at more power


def test_bad_plan_input() -> None:
    with pytest.raises(ConfigError, match="2 curves need as many"):
        plan_power([CURVE, CURVE], [1.0])
    with pytest.raises(ConfigError, match="positive"):
        plan_power([CURVE], [0.0])
    with pytest.raises(ConfigError, match="3 ranks planned, 2 compute times"):
        StragglerPlanner([CURVE] * 3).observe([1.0, 1.0])


def test_planner_replans_when_the_imbalance_moves() -> None:
    planner = StragglerPlanner([CURVE] * 4, window_steps=4)
    slow = [1.0, 1.0, 1.0, 1.15]
    plans = []
    for step in range(60):
        if step == 30:
            slow = [1.0, 1.1, 1.0, 1.0]  # rank 3 recovers, rank 1 slows
        times = [s * CURVE.time_at(w) for s, w in zip(slow, planner.limits_w, strict=True)]
        if (plan := planner.observe(times)) is not None:
            plans.append((step, plan.critical_rank))
    assert plans[0] == (3, 3)
    assert planner.plan is not None and planner.plan.critical_rank == 1
    assert planner.replans == len(plans) - 1 >= 1
    assert all(step > 30 for step, _ in plans[1:])  # no re-plan while nothing moved
    assert planner.limits_w[1] == 250.0 and max(planner.limits_w[i] for i in (0, 2, 3)) < 250.0


def test_simulation_saves_energy_within_one_percent_of_step_time() -> None:
    result = simulate(SimConfig(ranks=8, steps=600, seed=1))
    assert result.saved_rel > 0.10
    assert abs(result.step_time_change_rel) <= 0.01
    assert result.replans >= 1
    # after the shift the new straggler is on the critical path
    assert result.plans[-1]["critical_rank"] in (5, 6)
    data = result.to_dict()
    assert data["method"] == "simulated" and "Zeus" in data["source"]
    assert data["slowdowns"][1] == {"from_step": 300, "ranks": {5: 1.08, 6: 1.12}}


@pytest.mark.parametrize("workload", ["cifar100", "squad", "librispeech", "movielens-1m"])
def test_step_time_stays_within_one_percent_on_every_workload(workload: str) -> None:
    summary = simulate_seeds(SimConfig(workload=workload, ranks=6, steps=300,
                                       phases=((0.0, {1: 1.2}), (0.5, {4: 1.1}))), 3)  # fmt: skip
    assert summary["step_time_change_rel"]["max"] <= 0.01
    assert summary["saved_rel"]["min"] > 0.0


def test_no_imbalance_no_saving_and_no_slowdown() -> None:
    result = simulate(SimConfig(ranks=4, steps=200, phases=((0.0, {}),), noise_rel=0.0,
                                profile_noise_rel=0.0))  # fmt: skip
    assert result.planned_energy_j == pytest.approx(result.baseline_energy_j, rel=0.02)
    assert abs(result.step_time_change_rel) < 0.002


def test_bad_simulation_input() -> None:
    with pytest.raises(ConfigError, match="unknown workload 'gpt5'"):
        v100_curve("gpt5")
    with pytest.raises(ConfigError, match="must name ranks below 4"):
        simulate(SimConfig(ranks=4, phases=((0.0, {7: 1.2}),)))


@pytest.mark.skipif(not SHARED_TRACE.exists(), reason=f"no shared data at {SHARED_TRACE}")
def test_packaged_curves_are_the_zeus_rows_unchanged() -> None:
    from importlib import resources

    packaged = (resources.files("greenml") / "data" / "v100_power_curves.csv").read_text()
    shared = {tuple(r.values()) for r in csv.DictReader(SHARED_TRACE.open())}
    rows = list(csv.DictReader(packaged.splitlines()))
    assert len(rows) == 42 and all(tuple(r.values()) in shared for r in rows)

"""The trace simulator: totals, oracle, baseline, profiling charge, early stop, real traces."""

from __future__ import annotations

from pathlib import Path

import pytest

from greenml.errors import ConfigError
from greenml.optimize.simulate import expected_choice, simulate
from greenml.optimize.zeus_trace import ZEUS_JOBS, WorkloadTrace, load_workload
from tests.optimize.test_zeus_trace import SHARED, write_traces

LIMITS = (100, 150, 200)
# epoch time (s) at 200 W per size; lower limits slow the epoch and cut the power
BASE_TIME_S = {8: 2000.0, 256: 10.0, 512: 7.0, 1024: 6.0, 2048: 5.5}
PATHS = {8: [30.0], 256: [30, 36], 512: [28, 30], 1024: [70, 78], 2048: [float("nan")] * 2}


def epoch(size: int, limit: int) -> tuple[float, float]:
    """(time s, power W) of one epoch: a V100-like curve."""
    slow = {100: 1.6, 150: 1.15, 200: 1.0}[limit]
    return BASE_TIME_S[size] * slow, {100: 95.0, 150: 140.0, 200: 170.0}[limit]


@pytest.fixture
def trace(tmp_path: Path) -> WorkloadTrace:
    profiles = {(b, p): epoch(b, p) for b in BASE_TIME_S for p in LIMITS}
    train, power = write_traces(tmp_path, PATHS, profiles)  # type: ignore[arg-type]
    return load_workload(train, power, "cifar100/shufflenetv2")


def expected_cost(size: int, limit: int) -> float:
    """Brute force: expected epochs per success (failures retried) × the epoch's cost."""
    paths = PATHS[size]
    reached = [e for e in paths if e == e and e <= 100]
    if not reached:
        return float("inf")
    attempt = sum(e if e == e and e <= 100 else 100 for e in paths) / len(paths)
    time_s, power_w = epoch(size, limit)
    return attempt * len(paths) / len(reached) * (0.5 * time_s * power_w + 0.5 * 200 * time_s)


def test_totals_are_the_sum_of_the_history(trace: WorkloadTrace) -> None:
    sim = simulate(trace, eta=0.5, beta=2.0, seed=4)
    assert sim.recurrences == 2 * 5 * 3  # 2 x |batch sizes| x |power limits|
    assert sim.total_cost == pytest.approx(sum(r.cost for r in sim.history))
    assert sim.total_cost == pytest.approx(sum(sim.recurrence_costs()))
    assert sim.total_energy_j == pytest.approx(sum(r.energy_j for r in sim.history))
    assert sim.total_time_s == pytest.approx(sum(r.time_s for r in sim.history))
    for run in sim.history:
        assert run.cost == pytest.approx(0.5 * run.energy_j + 0.5 * 200 * run.time_s)
    # every recurrence ends with a run that reached the target, and only that one
    assert [r.recurrence for r in sim.history if r.reached] == list(range(1, 31))


def test_oracle_is_the_true_minimum_and_baseline_the_default_at_max_power(
    trace: WorkloadTrace,
) -> None:
    sim = simulate(trace, recurrences=12, seed=1)
    costs = {(b, p): expected_cost(b, p) for b in BASE_TIME_S for p in LIMITS}
    best = min(costs, key=costs.__getitem__)
    assert (sim.oracle.batch_size, sim.oracle.power_limit) == best
    assert sim.oracle.cost == pytest.approx(costs[best])
    assert (sim.baseline.batch_size, sim.baseline.power_limit) == (1024, 200)
    assert sim.baseline.cost == pytest.approx(costs[(1024, 200)])
    assert sim.baseline.reach_share == 1.0
    document = sim.to_dict()
    assert document["oracle"]["total_cost"] == pytest.approx(costs[best] * 12)  # type: ignore[index]


def test_first_run_of_a_size_pays_for_profiling_every_limit(trace: WorkloadTrace) -> None:
    sim = simulate(trace, recurrences=1, seed=0)
    (run,) = sim.history
    assert (run.batch_size, run.profiled, run.reached) == (1024, True, True)
    epoch_cost = {
        p: 0.5 * epoch(1024, p)[0] * epoch(1024, p)[1] + 100 * epoch(1024, p)[0] for p in LIMITS
    }
    kept = min(LIMITS, key=epoch_cost.__getitem__)
    assert run.power_limit == kept
    first_e = sum(epoch(1024, p)[0] * epoch(1024, p)[1] for p in LIMITS) / 3
    rest_e = (run.epochs - 1) * epoch(1024, kept)[0] * epoch(1024, kept)[1]
    assert run.energy_j == pytest.approx(first_e + rest_e)
    later = simulate(trace, recurrences=40, seed=0).history
    for size in {r.batch_size for r in later if r.epochs}:
        flags = [r.profiled for r in later if r.batch_size == size and r.epochs]
        assert flags[0] and not any(flags[1:])  # profiled once, when it first ran


def test_runs_stop_at_beta_times_the_best_cost(trace: WorkloadTrace) -> None:
    sim = simulate(trace, beta=2.0, seed=2)
    best = float("inf")
    stopped = 0
    for run in sim.history:
        if not run.reached:
            assert run.cost <= 2.0 * best + 1e-6
            if run.epochs:  # it ran until the next epoch would have passed the threshold
                stopped += 1
                time_s, power_w = epoch(run.batch_size, int(run.power_limit))
                next_epoch_cost = 0.5 * time_s * power_w + 100 * time_s
                assert run.cost + next_epoch_cost > 2.0 * best
        else:
            best = min(best, run.cost)
    assert stopped >= 1  # 2048 never reaches the target: its exploration was cut short


def test_a_size_too_dear_for_one_epoch_never_starts(trace: WorkloadTrace) -> None:
    sim = simulate(trace, seed=3)
    never = [r for r in sim.history if r.batch_size == 8]
    assert never and all(r.epochs == 0 and r.energy_j == 0 and not r.profiled for r in never)
    first = never[0]
    retry = [r for r in sim.history if r.recurrence == first.recurrence and r.attempt > 1]
    assert retry and retry[-1].reached  # the recurrence went on with another size


def test_replays_are_deterministic_per_seed(trace: WorkloadTrace) -> None:
    a, b = simulate(trace, seed=9), simulate(trace, seed=9)
    assert a.history == b.history
    assert len({simulate(trace, seed=s).total_cost for s in range(5)}) > 1


def test_bad_settings_are_config_errors(trace: WorkloadTrace) -> None:
    with pytest.raises(ConfigError, match="eta"):
        simulate(trace, eta=1.5)
    with pytest.raises(ConfigError, match="recurrences"):
        simulate(trace, recurrences=0)
    with pytest.raises(ConfigError, match="beta"):
        simulate(trace, beta=0.5)
    with pytest.raises(ConfigError, match="profile_share"):
        simulate(trace, profile_share=0.0)


def test_skipped_pairs_are_reported(tmp_path: Path) -> None:
    profiles = {(b, p): epoch(b, p) for b in (256, 512, 1024) for p in LIMITS}
    del profiles[(512, 100)]
    train, power = write_traces(tmp_path, {256: [30], 512: [28], 1024: [70]}, profiles)
    sim = simulate(load_workload(train, power, "cifar100/shufflenetv2"), recurrences=5)
    reason = "power limit missing from the power trace"
    assert sim.to_dict()["skipped"] == [{"batch_size": 512, "power_limit": 100.0, "reason": reason}]
    assert all(r.power_limit != 100 for r in sim.history if r.batch_size == 512)


@pytest.mark.skipif(not SHARED.exists(), reason="shared Zeus traces not on this machine")
@pytest.mark.parametrize("workload", sorted(ZEUS_JOBS))
def test_real_traces_end_near_the_oracle(workload: str) -> None:
    trace = load_workload(SHARED / "summary_train.csv", SHARED / "summary_power_v100.csv", workload)
    sim = simulate(trace, eta=0.5, beta=2.0, seed=0)
    assert sim.total_cost == pytest.approx(sum(r.cost for r in sim.history))
    brute = min(expected_choice(trace, b, p, 0.5).cost for b, p in trace.profiles)
    assert sim.oracle.cost == pytest.approx(brute)
    assert sim.baseline.batch_size == trace.default_batch_size
    assert sim.baseline.power_limit == 250
    assert sim.second_half_ratio() <= 1.10
    assert sim.total_cost <= sim.baseline.cost * sim.recurrences * 1.02

"""Straggler-aware power limits at run time: three real gloo ranks, each with its own fake V100."""

from __future__ import annotations

import json
import multiprocessing
import signal
from pathlib import Path
from typing import Any

import pytest

from greenml.errors import ConfigError
from greenml.optimize.objective import LimitProfile
from greenml.optimize.straggler.planner import PowerCurve
from tests.fakes.fake_pynvml import FakeClock, FakeNvml, v100
from tests.optimize.fake_gpus import v100_curve

pytest.importorskip("torch.distributed")

WORLD = 3
# rank 1 straggles by 15 %; at step 60 it recovers and rank 2 slows by 12 %
JOB: dict[str, Any] = {
    "steps": 120, "shift_at": 60, "before": {"1": 1.15}, "after": {"2": 1.12},
    "jitter": 0.005, "sync_every": 4,
}  # fmt: skip
MAX_W = 250.0


def _spawn(target: Any, args_of: Any, count: int) -> None:
    """``count`` forked processes running ``target(*args_of(i))``; each must exit 0."""
    context = multiprocessing.get_context("fork")  # fork: torch is not imported again
    procs = [context.Process(target=target, args=args_of(i)) for i in range(count)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=60)
        if proc.exitcode is None:
            proc.kill()
        assert proc.exitcode == 0, f"rank exited with {proc.exitcode}"


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The baseline and the controlled run of every rank, and the GPU state file after."""
    from tests.optimize._straggler_worker import main

    tmp = tmp_path_factory.mktemp("straggler")
    state = tmp / "gpu-state.json"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GREENML_GPU_STATE", str(state))  # shared by the ranks (one UUID each)
        mp.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        _spawn(main, lambda r: (r, WORLD, str(tmp / "rdv"), str(tmp / f"r{r}.json"), JOB), WORLD)
    ranks = [json.loads((tmp / f"r{r}.json").read_text()) for r in range(WORLD)]
    return {"ranks": ranks, "state_left": state.exists()}


def _limits(job: dict[str, Any], steps: range) -> list[set[float]]:
    """Each rank's limits in force over ``steps`` of the controlled run."""
    return [{r["planned"]["limits_w"][s] for s in steps} for r in job["ranks"]]


def test_fast_ranks_drop_their_limit_and_the_straggler_keeps_max(job: dict[str, Any]) -> None:
    fast0, slow, fast2 = _limits(job, range(12, JOB["shift_at"]))
    assert slow == {MAX_W}
    assert len(fast0) == len(fast2) == 1 and max(fast0 | fast2) < MAX_W - 40  # V100: ≤ 210 W


def test_step_time_holds_and_energy_drops(job: dict[str, Any]) -> None:
    base = job["ranks"][0]["baseline"]["step_s"]  # every rank holds the all-reduced longest
    plan = job["ranks"][0]["planned"]["step_s"]
    assert job["ranks"][1]["planned"]["step_s"] == plan
    assert sum(plan) / sum(base) - 1 <= 0.01  # the whole run, the shift's transient included
    steady = range(12, JOB["shift_at"])
    assert sum(plan[s] for s in steady) / sum(base[s] for s in steady) - 1 <= 0.01
    base_j = sum(r["baseline"]["energy_j"] for r in job["ranks"])
    plan_j = sum(r["planned"]["energy_j"] for r in job["ranks"])
    assert plan_j < 0.95 * base_j  # fake energy counters: computing, then waiting at 70 W


def test_an_imbalance_shift_triggers_a_replan(job: dict[str, Any]) -> None:
    summaries = [r["planned"]["summary"] for r in job["ranks"]]
    assert all(s["plans"] == summaries[0]["plans"] for s in summaries)  # every rank agrees
    plans = summaries[0]["plans"]
    assert plans[0]["critical_rank"] == 1 and plans[0]["step"] <= 12
    assert summaries[0]["replans"] >= 1
    assert all(p["step"] > JOB["shift_at"] for p in plans[1:])  # no re-plan on jitter
    assert plans[-1]["critical_rank"] == 2 and plans[-1]["step"] <= JOB["shift_at"] + 16
    fast0, fast1, slow = _limits(job, range(JOB["steps"] - 30, JOB["steps"]))
    assert slow == {MAX_W} and max(fast0 | fast1) < MAX_W


def test_limits_are_restored_at_the_end(job: dict[str, Any]) -> None:
    assert [r["planned"]["after_close_w"] for r in job["ranks"]] == [MAX_W] * WORLD
    assert not job["state_left"]  # every rank's original entry cleared (file removed)


def test_a_bad_curve_on_one_rank_stops_every_rank(tmp_path: Path) -> None:
    from tests.optimize._straggler_worker import refuse_main

    tmp = tmp_path
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GREENML_GPU_STATE", str(tmp / "state.json"))
        _spawn(refuse_main, lambda r: (r, 2, str(tmp / "rdv"), str(tmp / f"r{r}.json")), 2)
    out = [json.loads((tmp / f"r{r}.json").read_text()) for r in range(2)]
    assert out[1]["error"].startswith("ConfigError: the curve's limits 100–300 W exceed")
    assert out[0]["error"].startswith("ConfigError: rank 1 cannot run")
    assert [o["limit_w"] for o in out] == [MAX_W, MAX_W]


def test_an_exception_and_sigterm_restore_the_limit(tmp_path: Path) -> None:
    from tests.optimize._straggler_worker import sigterm_main

    fake_state = tmp_path / "fake-gpus.json"
    context = multiprocessing.get_context("fork")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GREENML_GPU_STATE", str(tmp_path / "state.json"))
        proc = context.Process(target=sigterm_main, args=(str(tmp_path / "rdv"), str(fake_state)))
        proc.start()
        proc.join(timeout=60)
    assert proc.exitcode == -signal.SIGTERM  # died of the signal, as without greenml
    assert json.loads(fake_state.read_text()) == {"GPU-v100-rank0": MAX_W}  # 225 W undone
    assert not (tmp_path / "state.json").exists()  # the original's entry cleared


def test_single_process_is_refused() -> None:
    from greenml.optimize.straggler.runtime import StragglerPowerController

    nvml = FakeNvml([v100(limit_curve=v100_curve())], FakeClock(0.0))
    with pytest.raises(ConfigError, match="needs torch\\.distributed"):
        StragglerPowerController(PowerCurve((100.0, 250.0), (2.0, 1.0), (90.0, 200.0)), nvml=nvml)
    assert nvml.set_calls == []


def test_curve_from_optimizer_is_per_gpu() -> None:
    from types import SimpleNamespace

    from greenml.optimize.straggler.runtime import curve_from_optimizer

    joint = [LimitProfile(250.0, 1.0, 400.0), LimitProfile(150.0, 1.3, 312.0)]  # 2 ranks
    opt = SimpleNamespace(profiles=joint, plan=SimpleNamespace(ranks=2, gpus=("gpu0",)))
    curve = curve_from_optimizer(opt)
    assert curve.limits_w == (150.0, 250.0) and curve.time_s == (1.3, 1.0)
    assert curve.power_w == pytest.approx((120.0, 200.0))
    with pytest.raises(ConfigError, match="fewer than two"):
        curve_from_optimizer(SimpleNamespace(profiles=joint[:1], plan=opt.plan))

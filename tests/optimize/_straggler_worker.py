"""Ranks of a data-parallel job on gloo (CPU), each with its own fake V100.

``main(rank, world, init_file, out_json, job)`` runs in a forked process. Each
rank's GPU follows the Zeus V100 ImageNet curve at the limit in force, times its
``slowdown`` (a straggler) and a per-step jitter. A fake step: the rank computes
for its GPU's step time (timed by the controller), the ranks all-reduce the
longest compute time (the gradient exchange, where the fast wait), and the rank
waits at its GPU's wait power until the slowest is done. The job runs twice on
the same jitter: all GPUs at their highest limit (baseline), then under a
:class:`StragglerPowerController`. At ``shift_at`` the slowdowns change.
"""

from __future__ import annotations

import json
import os
import random
import signal
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from greenml.optimize.straggler.planner import PowerCurve
from greenml.optimize.straggler.runtime import StragglerPowerController
from tests.fakes.fake_pynvml import FakeClock, FakeNvml, v100
from tests.optimize.fake_gpus import v100_curve

WAIT_POWER_W = 70.0  # a V100 spinning in a collective: above idle, far below computing


def own_nvml(rank: int, state_path: str | None = None) -> FakeNvml:
    """One busy V100 (100–250 W) of this rank, with its own UUID and clock."""
    spec = v100(f"GPU-v100-rank{rank}", limit_curve=v100_curve("imagenet"),
                wait_power_w=WAIT_POWER_W)  # fmt: skip
    return FakeNvml([spec], FakeClock(0.0), state_path=state_path)


def profiled_curve(rank: int) -> Any:
    """The curve as profiling found it: a PowerCurve, or (rank 0) LimitProfile rows."""
    from greenml.optimize.objective import LimitProfile

    rows = v100_curve("imagenet")
    if rank == 0:
        return [LimitProfile(w, t, p * t) for w, p, t in rows]
    return PowerCurve(tuple(r[0] for r in rows), tuple(r[2] for r in rows),
                      tuple(r[1] for r in rows))  # fmt: skip


def run(rank: int, job: dict[str, Any], controlled: bool) -> dict[str, Any]:
    """One run of the job; per step: limit, compute and step time; the GPU's energy."""
    nvml = own_nvml(rank)
    nvml.nvmlInit()  # the energy counter is read as a Meter would
    spec = nvml.gpus[0]
    rng = random.Random(1000 + rank)  # the same jitter in both runs
    ctl = None
    if controlled:
        ctl = StragglerPowerController(profiled_curve(rank), gpu=0, nvml=nvml, clock=nvml.clock,
                                       sync_every=job["sync_every"])  # fmt: skip
    limits, computes, steps = [], [], []
    for step in range(job["steps"]):
        phase = job["before"] if step < job["shift_at"] else job["after"]
        spec.slowdown = phase.get(str(rank), 1.0)
        limits.append(spec.power_limit_w)
        compute_s = nvml.step_time_s(0) * rng.gauss(1.0, job["jitter"])
        if ctl is not None:
            ctl.begin_step()
        nvml.clock.advance(compute_s)
        if ctl is not None:
            ctl.compute_done()
        longest = torch.tensor([compute_s], dtype=torch.float64)
        dist.all_reduce(longest, op=dist.ReduceOp.MAX)  # the gradient exchange
        nvml.wait(float(longest.item()) - compute_s)
        computes.append(compute_s)
        steps.append(float(longest.item()))
    energy_j = nvml.nvmlDeviceGetTotalEnergyConsumption(nvml.nvmlDeviceGetHandleByIndex(0))
    out: dict[str, Any] = {"limits_w": limits, "compute_s": computes, "step_s": steps,
                           "energy_j": energy_j / 1000.0}  # fmt: skip
    if ctl is not None:
        out["summary"] = ctl.summary()
        ctl.close()
        out["after_close_w"] = spec.power_limit_w
    return out


def main(rank: int, world: int, init_file: str, out: str, job: dict[str, Any]) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        result = {"baseline": run(rank, job, False), "planned": run(rank, job, True)}
        with open(out, "w") as handle:
            json.dump(result, handle)
    finally:
        dist.destroy_process_group()


def refuse_main(rank: int, world: int, init_file: str, out: str) -> None:
    """Rank 1's curve reaches 300 W, beyond its V100: every rank must refuse, none hang."""
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    curve = profiled_curve(1)
    if rank == 1:
        curve = PowerCurve((*curve.limits_w, 300.0), (*curve.time_s, curve.time_s[-1]),
                           (*curve.power_w, curve.power_w[-1]))  # fmt: skip
    nvml = own_nvml(rank)
    try:
        StragglerPowerController(curve, gpu=0, nvml=nvml)
        message = "no error"
    except Exception as exc:
        message = f"{type(exc).__name__}: {exc}"
    with open(out, "w") as handle:
        json.dump({"error": message, "limit_w": nvml.gpus[0].power_limit_w}, handle)
    dist.destroy_process_group()


def sigterm_main(init_file: str, state_path: str) -> None:
    """A single-rank job whose curve tops at 225 W (so that is set): an exception in
    the compute restores 250 W; a second controller is then killed by SIGTERM."""
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=0, world_size=1)
    nvml = own_nvml(0, state_path)
    rows = [r for r in v100_curve("imagenet") if r[0] <= 225.0]
    curve = PowerCurve(tuple(r[0] for r in rows), tuple(r[2] for r in rows),
                       tuple(r[1] for r in rows))  # fmt: skip
    ctl = StragglerPowerController(curve, gpu=0, nvml=nvml, clock=nvml.clock)
    try:  # an exception inside the timed compute restores the limit
        with ctl.compute():
            assert nvml.gpus[0].power_limit_w == 225.0
            raise KeyError("a failing forward pass")
    except KeyError:
        assert nvml.gpus[0].power_limit_w == 250.0
    ctl = StragglerPowerController(curve, gpu=0, nvml=nvml, clock=nvml.clock)
    saved = json.loads(Path(os.environ["GREENML_GPU_STATE"]).read_text())["gpus"]
    assert ctl.limit_w == 225.0 and nvml.gpus[0].power_limit_w == 225.0
    assert saved["GPU-v100-rank0"]["original_limit_w"] == 250.0
    with ctl.compute():
        nvml.clock.advance(nvml.step_time_s(0))
        os.kill(os.getpid(), signal.SIGTERM)  # the guard restores, then the process dies
    raise SystemExit(3)  # not reached

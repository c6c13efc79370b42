"""One rank of a data-parallel job on gloo (CPU) with one fake V100 per rank.

``main(rank, world, init_file, dataset, out_json)``, in a forked process or via
``python -m tests.optimize._ddp_worker RANK WORLD INIT_FILE DATASET OUT_JSON``:
the rank's GPU follows the V100 trace of DATASET; the rank writes what it
profiled, chose and left set to OUT_JSON.
"""

from __future__ import annotations

import json
import sys

import torch
import torch.distributed as dist

from greenml.measure.meter import Meter
from greenml.measure.sensors.nvml import NvmlSensor
from greenml.optimize.power_limit import PowerLimitOptimizer
from tests.fakes.fake_pynvml import FakeClock, FakeNvml
from tests.optimize.fake_gpus import v100s


def main(rank: int, world: int, init_file: str, dataset: str, out: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    nvml = FakeNvml(v100s(1, dataset), FakeClock(0.0))
    meter = Meter(sensors=[NvmlSensor(nvml=nvml)], sample_hz=0)
    grad = torch.ones(4)
    with PowerLimitOptimizer(
        meter, gpus=[0], nvml=nvml, clock=nvml.clock, warmup_steps=1, profile_steps=2,
        wait_for_steady=False,  # steady at once on the fake; the test counts steps
    ) as opt:
        for _ in range(7 * 3 + 4):
            with opt.step():
                nvml.run_step()
                dist.all_reduce(grad)  # the step's gradient exchange
        result = {
            "world": opt.plan.ranks,
            "profiles": [[p.power_limit_w, p.time_s, p.energy_j] for p in opt.profiles],
            "chosen_w": opt.chosen.power_limit_w if opt.chosen else None,
            "limit_in_force_w": nvml.gpus[0].power_limit_w,
        }
    result["after_close_w"] = nvml.gpus[0].power_limit_w
    with open(out, "w") as handle:
        json.dump(result, handle)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5])

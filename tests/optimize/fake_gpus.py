"""Fake V100s whose power and step time follow the Zeus V100 power trace.

``nvml()`` is the factory named by ``GREENML_FAKE_NVML`` in tests that run
greenml in another process: the GPUs' limits live in the JSON file
``$GREENML_TEST_FAKE_STATE``, so a training process and a later
``greenml gpu restore`` see the same GPUs.
"""

from __future__ import annotations

import csv
import io
import os
from importlib import resources

from tests.fakes.fake_pynvml import FakeClock, FakeGpuSpec, FakeNvml, v100

FACTORY = "tests.optimize.fake_gpus:nvml"
UUIDS = ("GPU-v100-aaaa-0000", "GPU-v100-bbbb-1111")
# ImageNet/ResNet-50 at batch 256: ~1.28M images → 5005 steps per epoch.
STEPS_PER_EPOCH = {"imagenet": 5005, "cifar100": 49, "squad": 2767}


def v100_curve(dataset: str = "imagenet") -> list[tuple[float, float, float]]:
    """(limit W, power W, step time s) rows of one workload of the packaged V100 trace."""
    text = (resources.files("greenml") / "data" / "v100_power_curves.csv").read_text()
    steps = STEPS_PER_EPOCH[dataset]
    return sorted(
        (float(r["power_limit"]), float(r["average_power"]), float(r["time_per_epoch"]) / steps)
        for r in csv.DictReader(io.StringIO(text))
        if r["dataset"] == dataset
    )


def v100s(count: int = 1, dataset: str = "imagenet") -> list[FakeGpuSpec]:
    """``count`` busy V100s (limits 100–250 W) following the trace of ``dataset``."""
    return [v100(UUIDS[i], limit_curve=v100_curve(dataset)) for i in range(count)]


def nvml() -> FakeNvml:
    """Two trace-driven V100s backed by ``$GREENML_TEST_FAKE_STATE``."""
    privileged = os.environ.get("GREENML_TEST_FAKE_PRIVILEGED", "1") == "1"
    return FakeNvml(
        v100s(2),
        FakeClock(0.0),
        privileged=privileged,
        state_path=os.environ["GREENML_TEST_FAKE_STATE"],
    )


def expected_choice(
    eta: float, dataset: str = "imagenet", limits: tuple[float, ...] | None = None
) -> float:
    """The limit of least Zeus cost on the trace itself (what profiling must find)."""
    from greenml.optimize.objective import LimitProfile, pick_power_limit

    rows = v100_curve(dataset)
    wanted = [r for r in rows if limits is None or r[0] in limits]
    profiles = [LimitProfile(w, t, p * t) for w, p, t in wanted]
    return pick_power_limit(profiles, eta, 250.0).power_limit_w

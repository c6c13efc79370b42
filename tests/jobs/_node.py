"""One simulated node of a job: fake NVML GPUs, then ``greenml run`` with the given arguments.

Run as ``python -m tests.jobs._node SPEC_JSON``: ``gpus_w`` (power of each fake H100),
``utilization`` (0-100), ``node`` (its name), ``argv`` (greenml's arguments). The GPUs
draw constant power on the wall clock, so a node's GPU energy is power x duration.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from greenml.measure.sensors import nvml as nvml_module
from tests.fakes.fake_pynvml import FakeNvml, Phase, h100


def main(spec: dict[str, Any]) -> int:
    util = float(spec.get("utilization", 90.0))
    gpus = [
        h100(f"GPU-{spec['node']}-{i}", trace=(Phase(0.0, float(w), utilization=util / 100),))
        for i, w in enumerate(spec["gpus_w"])
    ]
    fake = FakeNvml(gpus, clock=time.monotonic)
    nvml_module.import_nvml = lambda nvml=None: fake if nvml is None else nvml  # type: ignore[assignment]
    from greenml.cli import main as cli

    return int(cli(list(spec["argv"])) or 0)


if __name__ == "__main__":
    sys.exit(main(json.loads(sys.argv[1])))

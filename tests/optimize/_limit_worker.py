"""A training-like loop under the PowerLimitOptimizer, on the fake V100s of fake_gpus.

Run as ``python -m tests.optimize._limit_worker MODE`` with GREENML_TEST_FAKE_STATE
and GREENML_GPU_STATE set. Once it profiles a limit below the highest it prints
``profiling <limit>`` and then, by MODE:

- ``wait``: keeps stepping slowly (the parent sends SIGTERM);
- ``handler``: the same, with the program's own SIGTERM handler (exit code 143);
- ``crash``: dies with os._exit(3), restoring nothing;
- ``exit``: returns from main without close(): only atexit can restore.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from types import FrameType

from greenml.optimize.power_limit import PowerLimitOptimizer
from tests.optimize.fake_gpus import nvml as fake_nvml


def _own_handler(signum: int, frame: FrameType | None) -> None:
    print("own handler ran", flush=True)
    sys.exit(143)


def main(mode: str) -> None:
    if mode == "handler":
        signal.signal(signal.SIGTERM, _own_handler)
    nvml = fake_nvml()
    optimizer = PowerLimitOptimizer(
        gpus=[0], nvml=nvml, clock=nvml.clock, warmup_steps=1, profile_steps=2,
        wait_for_steady=False,  # steady at once on the fake; the test counts steps
    )
    announced = False
    for _ in range(10_000):
        with optimizer.step():
            nvml.run_step()
        limit = optimizer.current_limit_w
        if not announced and optimizer.phase == "profile" and limit is not None and limit < 250:
            print(f"profiling {limit:g}", flush=True)
            announced = True
            if mode == "crash":
                os._exit(3)
            if mode == "exit":
                return
        if announced:
            time.sleep(0.5)  # slow: the parent signals while this limit is profiled
    print("never signalled", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])

"""A fake NVML on the wall clock for the CPU smoke runs of benchmarks/gpu/.

An H100 whose power steps between 120 W and 420 W every 0.25 s for two
minutes: the energy counter is the exact integral, the power reading the
current step, so power integration differs from the counter as on a real GPU
under a bursty load. Named by ``GREENML_FAKE_NVML=tests.benchmarks.fake_gpu:nvml``.
"""

from __future__ import annotations

import time

from tests.fakes.fake_nvml_clocks import FakeNvmlClocks
from tests.fakes.fake_pynvml import Phase, h100

STEP_S = 0.25
STEPS = 480


def nvml() -> FakeNvmlClocks:
    """A fresh fake whose clock starts now (with supported and lockable clocks)."""
    start = time.monotonic()
    phases = [
        Phase(i * STEP_S, 420.0 if i % 2 else 120.0, utilization=1.0 if i % 2 else 0.0)
        for i in range(STEPS)
    ]
    return FakeNvmlClocks([h100(trace=phases)], clock=lambda: time.monotonic() - start)

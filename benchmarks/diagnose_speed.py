"""Time ``diagnose_run`` on a synthetic run of 1,000,000 samples (8 GPUs × 125,000).

Target: at most 1 s (median of 3) from the store to the findings. Prints PASS/FAIL.
Run: ``python benchmarks/diagnose_speed.py``.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from greenml.diagnose.run import diagnose_run
from greenml.measure.measurement import Sample
from greenml.store.repository import Store

GPUS, PER_GPU, TARGET_S = 8, 125_000, 1.0
FLUSH = 600


def build(store: Store) -> str:
    """A finished run whose GPUs alternate busy (300 W) and idle (60 W) every 100 s."""
    t0 = 1_700_000_000.0
    run_id = store.create_run(
        name="bench", command=["x"], tags={}, started_at=t0, pid=1, hostname="h"
    )
    rng = np.random.default_rng(0)
    times = t0 + np.arange(PER_GPU) * 0.1
    busy = (np.arange(PER_GPU) // 1000) % 2 == 0
    per_device = []
    for g in range(GPUS):
        act = np.where(busy, 0.8, 0.05) + rng.normal(0, 0.02, PER_GPU)
        power = np.where(busy, 300.0, 60.0) + rng.normal(0, 5, PER_GPU)
        per_device.append([
            Sample(f"gpu{g}", "gpu", float(t), float(p),
                   {"sm_activity": float(a), "memory_used_bytes": 20e9})
            for t, p, a in zip(times, power, act, strict=True)
        ])  # fmt: skip
    # Stored as the recorder stores them: one add_samples per flush (here every
    # FLUSH samples per device, i.e. a minute at 10 Hz, to keep the set-up short).
    for start in range(0, PER_GPU, FLUSH):
        store.add_samples(run_id, [s for dev in per_device for s in dev[start : start + FLUSH]])
    names = {f"gpu{g}": "NVIDIA A100-SXM4-80GB" for g in range(GPUS)}
    devices = {k: {"energy_j": 0.0, "method": "counter", "uncertainty_rel": 0.05, "name": n}
               for k, n in names.items()}  # fmt: skip
    energy = {"total_j": 0.0, "components": {"gpu": {"energy_j": 0.0, "devices": devices}}}
    store.finish_run(run_id, status="completed", exit_code=0, duration_s=PER_GPU * 0.1,
                     energy=energy, ended_at=t0 + PER_GPU * 0.1)  # fmt: skip
    return run_id


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(str(Path(tmp) / "bench.sqlite"))
        run_id = build(store)
        timings, found = [], 0
        for _ in range(3):
            start = time.perf_counter()
            result = diagnose_run(store, run_id)
            timings.append(time.perf_counter() - start)
            found = len(result.findings)
        store.close()
    median = statistics.median(timings)
    verdict = "PASS" if median <= TARGET_S else "FAIL"
    print(
        f"diagnose_run, {GPUS * PER_GPU:,} samples: median {median:.3f} s of 3 "
        f"({', '.join(f'{t:.3f}' for t in timings)}), {found} findings; "
        f"target ≤ {TARGET_S:.1f} s: {verdict} ({median / TARGET_S:.2f}× the target)"
    )
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())

"""Child-process bodies for store tests (importable under the spawn start method)."""

from __future__ import annotations

import os
import signal
import socket
import time
import traceback
from typing import Any

from greenml.measure.measurement import Sample
from greenml.store import open_store

RUNS_PER_WORKER = 5
BATCHES_PER_RUN = 4
SAMPLES_PER_BATCH = 25


def concurrent_writer(url: str, worker: int, barrier: Any, errors: Any) -> None:
    """Write runs and samples as fast as possible alongside other writers."""
    try:
        with open_store(url) as store:
            barrier.wait(timeout=60)
            for r in range(RUNS_PER_WORKER):
                run_id = store.create_run(
                    name=f"worker{worker}",
                    command=["train", str(r)],
                    tags={"worker": str(worker)},
                    started_at=time.time(),
                    pid=os.getpid(),
                    hostname=socket.gethostname(),
                )
                for b in range(BATCHES_PER_RUN):
                    t0 = 1000.0 + b * SAMPLES_PER_BATCH
                    store.add_samples(
                        run_id,
                        [
                            Sample("gpu0", "gpu", t0 + i, 100.0 + worker, {"utilization": 0.5})
                            for i in range(SAMPLES_PER_BATCH)
                        ],
                    )
                    store.heartbeat(run_id)
                    store.update_extra(run_id, {f"w{worker}b{b}": b})
                store.finish_run(
                    run_id,
                    status="completed",
                    exit_code=0,
                    duration_s=1.0,
                    energy={"total_j": 1.0, "total_kwh": 1.0 / 3.6e6, "components": {}},
                    ended_at=time.time(),
                )
    except BaseException:
        errors.put(f"worker {worker}: {traceback.format_exc()}")


def killed_run(url: str, samples_flushed: int) -> None:
    """Start a run, flush samples (gpu0 at 200 W, 1 s apart), then die by SIGKILL."""
    store = open_store(url)
    run_id = store.create_run(
        name="killed",
        command=["sleep", "forever"],
        tags={},
        started_at=time.time(),
        pid=os.getpid(),
        hostname=socket.gethostname(),
    )
    store.add_samples(
        run_id, [Sample("gpu0", "gpu", 5000.0 + i, 200.0) for i in range(samples_flushed)]
    )
    print(run_id, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


def concurrent_opener(url: str, worker: int, barrier: Any, errors: Any) -> None:
    """Open a store that may not exist yet at the same moment as other processes."""
    try:
        barrier.wait(timeout=60)
        with open_store(url) as store:
            store.create_run(
                name=f"opener{worker}",
                command=[],
                tags={},
                started_at=time.time(),
                pid=os.getpid(),
                hostname=socket.gethostname(),
            )
    except BaseException:
        errors.put(f"worker {worker}: {traceback.format_exc()}")

"""A local Ray cluster for the tests: a head and workers on this machine."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
# a removed node is declared dead within about a second, not Ray's default 15 s
FAST_HEALTH_CHECK = {"health_check_period_ms": 500, "health_check_failure_threshold": 2}


@contextmanager
def local_ray_cluster(workers: int = 1, head_cpus: int = 2, worker_cpus: int = 2) -> Iterator[Any]:
    """Start a head and ``workers`` nodes and connect to them; everything put back after.

    ``ray.init`` installs a SIGTERM handler (``sys.exit(15)``) in this process, and the
    environment is changed for the workers: both are restored on exit.
    """
    import ray
    from ray.cluster_utils import Cluster

    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    saved_env = {k: os.environ.get(k) for k in ("PYTHONPATH", "RAY_AUTH_MODE")}
    os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO)])
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    c = Cluster(initialize_head=True, head_node_args={
        "num_cpus": head_cpus, "include_dashboard": False, "_system_config": FAST_HEALTH_CHECK,
    })  # fmt: skip
    try:
        for _ in range(workers):
            c.add_node(num_cpus=worker_cpus)
        ray.init(address=c.address, log_to_driver=False)
        c.wait_for_nodes()
        yield c
    finally:
        ray.shutdown()
        c.shutdown()
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

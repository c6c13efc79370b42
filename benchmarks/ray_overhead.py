"""What ``greenml.integrations.ray`` adds to the wall time of a 1,000-task Ray batch job.

The same job (1,000 tasks of ``--task-ms`` each on a local Ray instance) runs plain and
under ``RayEnergy`` (a Meter per node at 10 Hz, each call logged), alternated for
``--rounds`` rounds so both see the same machine load; the median overhead is printed
against the target (issue 16: ≤ 2 %). The job is not stored (``store=False``): storing
happens once, after the job, and is timed apart.

Run: ``python benchmarks/ray_overhead.py [--tasks 1000] [--task-ms 20] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import ray

from greenml.integrations.ray import RayEnergy
from greenml.measure.sensors.fake import FakeDevice, FakeSensor


def fake_sensors() -> list[FakeSensor]:
    return [FakeSensor([FakeDevice("gpu0", [(0.0, 300.0)], name="Fake H100")])]


def work(ms: float) -> float:
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end:
        pass
    return ms


def batch(fn: object, tasks: int, ms: float) -> float:
    t = time.perf_counter()
    ray.get([fn.remote(ms) for _ in range(tasks)])  # type: ignore[attr-defined]
    return time.perf_counter() - t


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--task-ms", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpus", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    plain_fn = ray.remote(work)
    batch(plain_fn, 50, 1)  # warm the workers
    plain, measured = [], []
    for _ in range(args.rounds):
        plain.append(batch(plain_fn, args.tasks, args.task_ms))
        energy = RayEnergy(sensors=fake_sensors, sample_hz=10, store=False).start()
        fn = energy.remote(work)
        measured.append(batch(fn, args.tasks, args.task_ms))
        report = energy.finish()
    a, b = statistics.median(plain), statistics.median(measured)
    overhead = (b - a) / a
    print(f"{args.tasks} tasks × {args.task_ms:g} ms on {args.cpus} CPUs, median of {args.rounds}:")
    print(f"  plain Ray {a:.2f} s, with RayEnergy {b:.2f} s: overhead {overhead:+.1%} "
          f"{'PASS' if overhead <= 0.02 else 'FAIL'} (target ≤ 2 %)")  # fmt: skip
    print(f"  last round: {len(report.tasks)} tasks attributed, "
          f"{report.task_j:.0f} J of {report.total_j:.0f} J")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["GREENML_LEDGER"] = os.path.join(tmp, "ledger.jsonl")
        energy = RayEnergy(sensors=fake_sensors, sample_hz=10,
                           db_url=f"sqlite:///{tmp}/ray.db").start()  # fmt: skip
        batch(energy.remote(work), args.tasks, args.task_ms)
        t = time.perf_counter()
        energy.finish()
        print(f"  storing the job after it ended ({args.tasks} task windows): "
              f"{time.perf_counter() - t:.2f} s")  # fmt: skip
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())

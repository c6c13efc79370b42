"""A job of many nodes on PostgreSQL: does ingest keep up in real time, how fast is ``jobs show``?

Simulates ``--nodes`` nodes × ``--gpus`` GPUs sampled at ``--hz`` for ``--seconds`` of
job time, written as ``greenml run``'s recorder writes them (one ``add_samples`` per node
every 2 s of job time), by ``--writers`` threads with a store connection each; then times
``greenml jobs show`` on the job (median of 3, in-process and as a command).

Targets (issue 16): ingest faster than real time (ratio > 1), ``jobs show`` ≤ 1 s.
Default: 64 nodes × 8 GPUs × 120 s at 10 Hz (1.2 M samples, a couple of minutes);
``--seconds 3600`` is the full hour (18.4 M samples).

Run: ``python benchmarks/jobs_scale.py [--db postgresql://...] [--seconds 3600]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from greenml.jobs.summary import summarize_job
from greenml.measure.measurement import Sample
from greenml.store.jobs import job_runs
from greenml.store.repository import Store

PG_URL = os.environ.get("GREENML_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
FLUSH_S = 2.0
T0 = 1_767_225_600.0
JOB = "bench-job"


def _fresh_schema(admin_url: str) -> tuple[str, str]:
    import psycopg

    schema = f"greenml_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in admin_url else "?"
    return f"{admin_url}{sep}options=-csearch_path%3D{schema}", schema


def _drop_schema(admin_url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def _node(store: Store, rank: int, args: argparse.Namespace) -> str:
    """One node's run: created, its samples flushed every 2 s of job time, finished."""
    run_id = store.create_run(name="bench", command=["torchrun", "train.py"], tags={},
                              started_at=T0, pid=rank, hostname=f"node-{rank:02d}")  # fmt: skip
    store.update_extra(run_id, {"job": {
        "job_id": JOB, "source": "option", "job_name": "bench", "node": f"node-{rank:02d}",
        "node_source": "hostname", "node_rank": rank, "expected_nodes": args.nodes,
    }})  # fmt: skip
    per_flush = int(FLUSH_S * args.hz)
    step = 1.0 / args.hz
    flushes = int(args.seconds / FLUSH_S)
    for f in range(flushes):
        base = T0 + f * FLUSH_S
        batch = [
            Sample(f"gpu{g}", "gpu", base + i * step, 300.0 + g + rank % 7,
                   {"utilization": 0.9, "memory_used_bytes": 4e10, "sm_clock_mhz": 1980.0})
            for i in range(per_flush)
            for g in range(args.gpus)
        ]  # fmt: skip
        store.add_samples(run_id, batch)
    energy_per_gpu = 300.0 * args.seconds
    devices = {f"gpu{g}": {"energy_j": energy_per_gpu, "method": "counter",
                           "uncertainty_rel": 0.05, "name": "NVIDIA H100 80GB HBM3"}
               for g in range(args.gpus)}  # fmt: skip
    total = energy_per_gpu * args.gpus
    energy = {"total_j": total, "total_kwh": total / 3.6e6, "uncertainty_rel": 0.05,
              "components": {"gpu": {"energy_j": total, "method": "counter",
                                     "uncertainty_rel": 0.05, "devices": devices}},
              "notes": []}  # fmt: skip
    store.finish_run(run_id, status="completed", exit_code=0, duration_s=args.seconds,
                     energy=energy, ended_at=T0 + args.seconds)  # fmt: skip
    return run_id


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", default=PG_URL, help="PostgreSQL admin URL (a schema is made)")
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--hz", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--writers", type=int, default=8, help="concurrent node writers")
    args = parser.parse_args()
    url, schema = _fresh_schema(args.db)
    try:
        with Store(url) as store:
            samples = int(args.nodes * args.gpus * args.hz * (args.seconds // FLUSH_S) * FLUSH_S)
            print(f"ingest: {args.nodes} nodes × {args.gpus} GPUs × {args.seconds:g} s at "
                  f"{args.hz:g} Hz = {samples:,} samples, {args.writers} writers")  # fmt: skip
            local = threading.local()
            opened: list[Store] = []

            def write_node(rank: int) -> str:
                if not hasattr(local, "store"):  # one connection per writer, as one per node
                    local.store = Store(url)
                    opened.append(local.store)
                return _node(local.store, rank, args)

            t = time.perf_counter()
            try:
                with ThreadPoolExecutor(args.writers) as pool:
                    list(pool.map(write_node, range(args.nodes)))
            finally:
                for s in opened:
                    s.close()
            ingest_s = time.perf_counter() - t
            print(f"  {ingest_s:.1f} s wall for {args.seconds:g} s of job time: "
                  f"{args.seconds / ingest_s:.1f}× real time "
                  f"({samples / ingest_s:,.0f} samples/s; real time needs "
                  f"{args.nodes * args.gpus * args.hz:,.0f}/s) "
                  f"{'PASS' if ingest_s < args.seconds else 'FAIL'}")  # fmt: skip
            times = []
            for _ in range(3):
                t = time.perf_counter()
                summary = summarize_job(JOB, job_runs(store, JOB))
                times.append(time.perf_counter() - t)
            assert len(summary.nodes) == args.nodes and summary.missing_nodes == []
        show = statistics.median(times)
        print(f"jobs show (in-process, median of 3): {show * 1000:.0f} ms "
              f"{'PASS' if show <= 1.0 else 'FAIL'} (target ≤ 1 s)")  # fmt: skip
        cli = []
        src = str(Path(__file__).resolve().parents[1] / "src")
        env = {**os.environ, "PYTHONPATH": src}
        for _ in range(3):
            t = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "greenml", "jobs", "show", JOB, "--db", url, "--json",
                 "--no-sacct"], capture_output=True, text=True, env=env, check=True,
            )  # fmt: skip
            cli.append(time.perf_counter() - t)
        nodes = len(json.loads(done.stdout)["nodes"])
        print(f"greenml jobs show (command, start-up included, median of 3): "
              f"{statistics.median(cli) * 1000:.0f} ms for {nodes} nodes")  # fmt: skip
    finally:
        _drop_schema(args.db, schema)
    return 0


if __name__ == "__main__":
    sys.exit(main())

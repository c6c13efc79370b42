"""Team server under load on PostgreSQL, and one long upload next to MLflow's.

What it does, in one run:

1. loads a fresh PostgreSQL schema with ``--runs`` uploaded runs of one project
   (``--samples`` samples each, a tag per run, per-run totals: as uploads leave
   them) with COPY;
2. starts ``greenml server`` on it (a real process on 127.0.0.1) and measures,
   with ``--clients`` concurrent clients, the p50/p95 latency of the runs page
   (``/runs``, 50 rows), the project page (``/project``) and a run page
   (``/runs/ID``: charts, diagnosis, ledger), plus the API's runs list and a
   tag filter;
3. times the upload of a one-hour run sampled at 10 Hz on 8 GPUs (288,000
   samples) through ``POST /api/v1/runs``, and the same metric points sent to an
   MLflow tracking server on the same PostgreSQL with ``log_batch`` (1,000
   points a call, MLflow's limit), and prints the ratio. MLflow runs in its own
   virtual environment (``$GREENML_MLFLOW_VENV``, default
   ``~/.cache/greenml-bench/mlflow-venv``; created with pip when missing, or
   ``--no-mlflow``): it is never a dependency of greenml.

Latencies are measured by the clients on loopback (server time plus the
loopback round trip). The issue's scale is ``--runs 100000 --samples 100``
(10 million samples); the default is small enough for a few minutes on 2 cores::

    .venv/bin/python benchmarks/server_load.py
    .venv/bin/python benchmarks/server_load.py --runs 100000 --samples 100 --clients 8
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from greenml.store import access, open_store  # noqa: E402
from greenml.store.transfer import FORMAT  # noqa: E402

PG_URL = os.environ.get("GREENML_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
MLFLOW_VENV = Path(os.environ.get("GREENML_MLFLOW_VENV", "~/.cache/greenml-bench/mlflow-venv"))
T0 = 1.70e9


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--samples", type=int, default=100, help="samples per loaded run")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--requests", type=int, default=60, help="per page kind")
    parser.add_argument("--upload-seconds", type=int, default=3600)
    parser.add_argument("--no-mlflow", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the schema afterwards")
    args = parser.parse_args()

    schema = f"greenml_bench_{uuid.uuid4().hex[:8]}"
    url = _schema_url(schema)
    _psql(f'CREATE SCHEMA "{schema}"')
    try:
        with open_store(url) as store:
            token = access.create_token(store, "bench", "admin")
            pid = access.ensure_project(store, "bench")
        started = time.perf_counter()
        ids = _load(url, pid, args.runs, args.samples)
        print(f"loaded {args.runs:,} runs, {args.runs * args.samples:,} samples "
              f"in {time.perf_counter() - started:.1f} s (COPY)")  # fmt: skip
        server = _start_server(url)
        try:
            _latencies(server[1], token, ids, args.clients, args.requests)
            greenml_s = _upload_greenml(server[1], token, args.upload_seconds)
        finally:
            server[0].terminate()
            server[0].wait(timeout=30)
            print("greenml server stopped", flush=True)
        if args.no_mlflow:
            print("MLflow: skipped (--no-mlflow)")
        else:
            mlflow_s = _upload_mlflow(schema, args.upload_seconds)
            if mlflow_s is not None:
                print(f"ratio MLflow / greenml upload time: {mlflow_s / greenml_s:.1f}x "
                      f"(greenml {greenml_s:.2f} s, MLflow {mlflow_s:.2f} s)")  # fmt: skip
    finally:
        if not args.keep:
            _psql(f'DROP SCHEMA "{schema}" CASCADE')
    return 0


def _schema_url(schema: str) -> str:
    sep = "&" if "?" in PG_URL else "?"
    return f"{PG_URL}{sep}options=-csearch_path%3D{schema}"


def _psql(sql: str) -> None:
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(sql)


def _load(url: str, project_id: int, n_runs: int, n_samples: int) -> list[str]:
    """Insert runs as uploads leave them, with COPY (runs, tags, totals, blocks, samples)."""
    import psycopg

    from greenml.store.url import resolve_url

    rng = np.random.default_rng(7)
    ids = [f"b{i:011x}" for i in range(n_runs)]
    energy_j = rng.uniform(1e5, 5e7, n_runs)
    kg = energy_j / 3.6e6 * 0.35
    dsn = resolve_url(url).replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        with cur.copy("COPY runs (id, name, command, tags, status, started_at, ended_at, "
                      "heartbeat_at, duration_s, exit_code, pid, hostname, energy, environment, "
                      "extra, project_id) FROM STDIN") as copy:  # fmt: skip
            for i, run_id in enumerate(ids):
                start = T0 + i * 600.0
                e = float(energy_j[i])
                device = {"energy_j": e, "method": "counter", "uncertainty_rel": 0.05}
                gpu = {**device, "devices": {"gpu0": {**device, "name": "NVIDIA H100"}}}
                energy = {"total_j": e, "total_kwh": e / 3.6e6, "uncertainty_rel": 0.05,
                          "components": {"gpu": gpu}}  # fmt: skip
                extra = {"schema_version": 2, "carbon": {"status": "ok", "kg": float(kg[i]),
                                                         "uncertainty_rel": 0.1}}  # fmt: skip
                copy.write_row((run_id, f"job{i % 50}", '["python", "train.py"]',
                                json.dumps({"team": f"t{i % 20}"}), "completed", start,
                                start + n_samples, start, float(n_samples), 0, 0, None,
                                json.dumps(energy), "{}", json.dumps(extra),
                                project_id))  # fmt: skip
        with cur.copy("COPY run_tags (run_id, key, value) FROM STDIN") as copy:
            for i, run_id in enumerate(ids):
                copy.write_row((run_id, "team", f"t{i % 20}"))
        with cur.copy("COPY run_uploads (run_id, project_id, \"user\", uploaded_at, started_at, "
                      "energy_j, energy_uncertainty_j, measured_j, co2_g, co2_uncertainty_g, "
                      "cost_usd, cost_uncertainty_usd) FROM STDIN") as copy:  # fmt: skip
            for i, run_id in enumerate(ids):
                e = float(energy_j[i])
                copy.write_row((run_id, project_id, f"user{i % 7}", T0, T0 + i * 600.0, e,
                                e * 0.05, e, float(kg[i]) * 1000, float(kg[i]) * 100, None,
                                None))  # fmt: skip
        t = np.arange(n_samples, dtype=np.float64)
        with cur.copy("COPY sample_blocks (run_id, device, component, count, data) "
                      "FROM STDIN") as block_copy:  # fmt: skip
            for i, run_id in enumerate(ids):
                table = np.column_stack([T0 + i * 600.0 + t, 300 + 50 * np.sin(t / 10),
                                         np.full(n_samples, 0.8), np.full(n_samples, 0.6),
                                         np.full(n_samples, 4e10), np.full(n_samples, 1980.0)])
                block_copy.write_row((run_id, "gpu0", "gpu", n_samples,
                                      table.astype("<f8").tobytes()))  # fmt: skip
        columns = "run_id, device, component, t, power_w, utilization, sm_activity, " \
            "memory_used_bytes, sm_clock_mhz"
        with cur.copy(f"COPY samples ({columns}) FROM STDIN") as copy:
            buffer = io.StringIO()
            for i, run_id in enumerate(ids):
                start = T0 + i * 600.0
                for k in range(n_samples):
                    buffer.write(f"{run_id}\tgpu0\tgpu\t{start + k}\t{300 + 50 * np.sin(k / 10)}"
                                 "\t0.8\t0.6\t40000000000\t1980\n")  # fmt: skip
                if buffer.tell() > 8_000_000:
                    copy.write(buffer.getvalue())
                    buffer = io.StringIO()
            copy.write(buffer.getvalue())
        conn.commit()
        cur.execute("ANALYZE")
    return ids


def _start_server(url: str) -> tuple[subprocess.Popen[bytes], str]:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    process = subprocess.Popen([sys.executable, "-m", "greenml", "server", "--port", str(port),
                                "--db", url], env=env, stderr=subprocess.DEVNULL)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            httpx.get(f"{base}/api/v1/openapi.json", timeout=1)
            return process, base
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit("the server did not start")


def _latencies(base: str, token: str, ids: list[str], clients: int, requests: int) -> None:
    cookie_client = httpx.Client(base_url=base)
    cookie_client.post("/login", data={"token": token})
    cookies = dict(cookie_client.cookies)
    kinds = {
        "runs page /runs": lambda i: "/runs",
        "runs page, tag filter": lambda i: f"/runs?tag=team%3Dt{i % 20}",
        "API /api/v1/runs": lambda i: "/api/v1/runs?limit=50",
        "project page /project": lambda i: "/project",
        "run page /runs/ID": lambda i: f"/runs/{ids[(i * 7919) % len(ids)]}",
    }
    print(f"\nlatency with {clients} concurrent clients, {requests} requests each kind "
          "(client-side on loopback, ms):")  # fmt: skip
    print(f"  {'page':28} {'p50':>8} {'p95':>8} {'max':>8}")
    for name, path in kinds.items():
        times = _measure(base, cookies, token, path, clients, requests)
        times.sort()
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
        print(f"  {name:28} {statistics.median(times):8.1f} {p95:8.1f} {times[-1]:8.1f}")


def _measure(base: str, cookies: dict[str, str], token: str, path: Any, clients: int,
             requests: int) -> list[float]:  # fmt: skip
    """Latencies (ms) of ``requests`` GETs of ``path(i)`` from ``clients`` threads."""
    times: list[float] = []
    lock = threading.Lock()
    counter = iter(range(requests))

    def worker() -> None:
        with httpx.Client(base_url=base, cookies=cookies, timeout=60,
                          headers={"Authorization": f"Bearer {token}"}) as client:  # fmt: skip
            client.get(path(0))  # warm the connection
            while True:
                with lock:
                    i = next(counter, None)
                if i is None:
                    return
                t = time.perf_counter()
                response = client.get(path(i))
                elapsed = time.perf_counter() - t
                if response.status_code != 200:
                    raise SystemExit(f"{path(i)}: {response.status_code} {response.text[:200]}")
                with lock:
                    times.append(elapsed * 1000)

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return times


def _long_run(seconds: int) -> dict[str, Any]:
    """A one-hour run at 10 Hz on 8 GPUs as an upload document (288,000 samples)."""
    n = seconds * 10
    t = T0 + np.arange(n) / 10
    rng = np.random.default_rng(1)
    series = [{"device": f"gpu{d}", "component": "gpu", "t": t.tolist(),
               "power_w": (300 + 80 * rng.random(n)).round(1).tolist(),
               "utilization": rng.random(n).round(3).tolist(), "sm_activity": None,
               "memory_used_bytes": None, "sm_clock_mhz": None} for d in range(8)]  # fmt: skip
    e = 8 * 340.0 * seconds
    devices = {f"gpu{d}": {"energy_j": e / 8, "method": "counter", "uncertainty_rel": 0.05,
                           "name": "NVIDIA H100"} for d in range(8)}  # fmt: skip
    record = {
        "id": uuid.uuid4().hex[:12], "name": "one-hour-8gpu", "command": ["python", "train.py"],
        "tags": {"bench": "upload"}, "started_at": "2023-11-14T22:13:20+00:00",
        "ended_at": "2023-11-14T23:13:20+00:00", "duration_s": float(seconds), "exit_code": 0,
        "status": "completed", "environment": {}, "windows": [], "schema_version": 2,
        "energy": {"total_j": e, "total_kwh": e / 3.6e6, "uncertainty_rel": 0.05,
                   "components": {"gpu": {"energy_j": e, "method": "counter",
                                          "uncertainty_rel": 0.05, "devices": devices}}},
    }  # fmt: skip
    return {"format": FORMAT, "record": record, "windows": [], "samples": series,
            "ledger_entry": None, "user": "bench"}  # fmt: skip


def _upload_greenml(base: str, token: str, seconds: int) -> float:
    document = _long_run(seconds)
    points = sum(len(s["t"]) for s in document["samples"])
    t = time.perf_counter()
    body = json.dumps(document, separators=(",", ":")).encode()
    encode_s = time.perf_counter() - t
    t = time.perf_counter()
    response = httpx.post(f"{base}/api/v1/runs", content=body, timeout=300,
                          headers={"Authorization": f"Bearer {token}",
                                   "Content-Type": "application/json"})  # fmt: skip
    post_s = time.perf_counter() - t
    assert response.status_code == 201, response.text
    print(f"\nupload of a {seconds / 3600:g} h run at 10 Hz on 8 GPUs ({points:,} samples, "
          f"{len(body) / 1e6:.1f} MB JSON): greenml {encode_s + post_s:.2f} s "
          f"(JSON encoding {encode_s:.2f} s + POST until stored {post_s:.2f} s)")  # fmt: skip
    return encode_s + post_s


MLFLOW_CLIENT = r"""
import json, sys, time
import numpy as np
from mlflow.entities import Metric
from mlflow.tracking import MlflowClient
uri, seconds = sys.argv[1], int(sys.argv[2])
client = MlflowClient(uri)
exp = client.create_experiment(f"bench-{time.time()}")
n = seconds * 10
rng = np.random.default_rng(1)
t0 = 1_700_000_000_000
metrics = []
for d in range(8):
    power = (300 + 80 * rng.random(n)).round(1)
    util = rng.random(n).round(3)
    for k in range(n):
        metrics.append(Metric(f"gpu{d}_power_w", float(power[k]), t0 + k * 100, k))
        metrics.append(Metric(f"gpu{d}_utilization", float(util[k]), t0 + k * 100, k))
start = time.perf_counter()
run = client.create_run(exp)
for i in range(0, len(metrics), 1000):
    client.log_batch(run.info.run_id, metrics=metrics[i:i + 1000])
client.set_terminated(run.info.run_id)
print(json.dumps({"seconds": time.perf_counter() - start, "points": len(metrics)}))
"""


def _upload_mlflow(schema: str, seconds: int) -> float | None:
    python = _mlflow_python()
    if python is None:
        return None
    from greenml.store.url import resolve_url

    own = f"{schema}_mlflow"  # same server and database; MLflow has a `runs` table too
    _psql(f'CREATE SCHEMA "{own}"')
    try:
        return _run_mlflow(python, resolve_url(_schema_url(own)), own, seconds)
    finally:
        _psql(f'DROP SCHEMA "{own}" CASCADE')


def _run_mlflow(python: Path, backend: str, schema: str, seconds: int) -> float | None:
    artifacts = tempfile.mkdtemp(prefix="mlflow-artifacts-")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = Path(artifacts) / "mlflow-server.log"
    print(f"MLflow: starting its tracking server (log: {log}) ...", flush=True)
    with log.open("wb") as out:
        server = subprocess.Popen(
            [str(python), "-m", "mlflow", "server", "--backend-store-uri", backend,
             "--default-artifact-root", artifacts, "--host", "127.0.0.1", "--port", str(port),
             "--workers", "1"], stdout=out, stderr=out,
        )  # fmt: skip
    uri = f"http://127.0.0.1:{port}"
    try:
        for _ in range(1200):
            if server.poll() is not None:
                print(f"MLflow: the tracking server exited: {log.read_text()[-500:]}")
                return None
            try:
                if httpx.get(f"{uri}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        else:
            print("MLflow: the tracking server did not start")
            return None
        print("MLflow: sending the same run's points with log_batch ...", flush=True)
        done = subprocess.run([str(python), "-c", MLFLOW_CLIENT, uri, str(seconds)],
                              capture_output=True, text=True, check=False)  # fmt: skip
        if done.returncode != 0:
            print(f"MLflow: the client failed: {done.stderr.strip().splitlines()[-1:]}")
            return None
        result = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"MLflow tracking server on the same PostgreSQL (schema {schema}): "
              f"{result['points']:,} metric points by log_batch (1,000 a call) in "
              f"{result['seconds']:.2f} s (power and utilization of 8 GPUs; greenml also "
              "sends the record, windows and the other sample columns)")  # fmt: skip
        return float(result["seconds"])
    finally:
        server.terminate()
        server.wait(timeout=30)


def _mlflow_python() -> Path | None:
    venv = MLFLOW_VENV.expanduser()
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"MLflow: creating {venv} (pip install mlflow psycopg[binary]) ...")
        made = subprocess.run([sys.executable, "-m", "venv", str(venv)], check=False)
        pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "mlflow",
                              "psycopg[binary]"], check=False)  # fmt: skip
        if made.returncode or pip.returncode:
            print("MLflow: not installable here; the comparison is skipped")
            return None
    return python


if __name__ == "__main__":
    raise SystemExit(main())

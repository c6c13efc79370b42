"""greenml's dashboard against MLflow's UI on the same runs, in the same headless Chromium.

Both servers get the same 5,000 runs (name, user, team tag, duration, energy, CO2eq,
cost): greenml's ``greenml server`` over SQLite, and a real ``mlflow server`` with a
SQLite backend (runs logged with ``MlflowClient.log_batch``). For each, Playwright
measures the time from navigation to the first render of

- the runs list: its first row of runs on screen;
- a compare of 4 runs: greenml's ``/compare`` with the gate's verdicts, MLflow's
  ``compare-runs`` page with its table of the runs' metrics;

the first visit (cold browser cache) and the median of later visits (warm cache, a new
tab each time), and prints greenml ÷ MLflow. Run: ``make bench-dashboard`` (it installs
MLflow into .venv-mlflow), or ``.venv/bin/python benchmarks/dashboard_vs_mlflow.py
--mlflow PATH/TO/mlflow``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from tests.server.dashboard_site import load, varied_runs  # noqa: E402
from tests.server.live import LiveServer, free_port  # noqa: E402

from greenml.store import access, open_store  # noqa: E402

LOG_MLFLOW = r"""
import json, sys
from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient
runs = json.load(open(sys.argv[2]))
client = MlflowClient(tracking_uri=sys.argv[1])
experiment = client.create_experiment("greenml-bench")
client.set_experiment_tag(experiment, "mlflow.experimentKind", "custom_model_development")
ids = []
for r in runs:
    run = client.create_run(experiment, start_time=r["start_ms"], run_name=r["name"],
                            tags={"team": r["team"], "mlflow.user": r["user"]})
    ms = r["start_ms"] + 1
    metrics = [Metric(k, v, ms, 0) for k, v in r["metrics"].items()]
    client.log_batch(run.info.run_id, metrics=metrics,
                     params=[Param("samples", r["samples"])],
                     tags=[RunTag("greenml.run_id", r["id"])])
    client.set_terminated(run.info.run_id, end_time=r["end_ms"])
    ids.append(run.info.run_id)
print(json.dumps({"experiment": experiment, "ids": ids}))
"""


MLFLOW_MODE = """
localStorage.setItem("mlflow.workflowType_v1", '"machine_learning"');
localStorage.setItem("mlflow.assistant.panelOpen_v1", "false");
localStorage.setItem("mlflow.assistant.fab.autoOpenedOnFirstLoad_v1", "true");
"""
"""MLflow's UI in its "Model training" mode (the runs table), its assistant panel closed."""


def greenml_site(tmp: Path, documents: list[dict[str, Any]]) -> tuple[LiveServer, str]:
    db = f"sqlite:///{tmp / 'greenml.db'}"
    with open_store(db) as store:
        token = access.create_token(store, "bench", "read")
        load(store, access.ensure_project(store, "bench"), documents)
    return LiveServer(db, free_port(), tmp / "greenml.log").start(), token


def mlflow_site(
    tmp: Path, mlflow: Path, documents: list[dict[str, Any]]
) -> tuple[Any, str, dict[str, Any]]:
    """MLflow's store filled with the same runs, then ``mlflow server`` over it."""
    db = f"sqlite:///{tmp / 'mlflow.db'}"
    rows = []
    for doc in documents:
        r = doc["record"]
        start = time.mktime(time.strptime(r["started_at"][:19], "%Y-%m-%dT%H:%M:%S"))
        rows.append({
            "id": r["id"], "name": r["name"], "team": r["tags"]["team"], "user": doc["user"],
            "samples": r["tags"]["samples"], "start_ms": int(start * 1000),
            "end_ms": int((start + r["duration_s"]) * 1000),
            "metrics": {"energy_kwh": r["energy"]["total_j"] / 3.6e6, "co2_kg": r["carbon"]["kg"],
                        "cost_usd": r["cost"]["usd"], "duration_s": r["duration_s"]},
        })  # fmt: skip
    (tmp / "runs.json").write_text(json.dumps(rows))
    python = mlflow.parent / "python"
    logged = subprocess.run([str(python), "-c", LOG_MLFLOW, db, str(tmp / "runs.json")],
                            check=True, capture_output=True, text=True, cwd=tmp)  # fmt: skip
    found = json.loads(logged.stdout.strip().splitlines()[-1])
    port = free_port()
    log = (tmp / "mlflow.log").open("wb")
    server = subprocess.Popen(
        [str(mlflow), "server", "--backend-store-uri", db, "--host", "127.0.0.1",
         "--port", str(port), "--workers", "1",
         "--default-artifact-root", str(tmp / "artifacts")],
        stdout=log, stderr=log, cwd=tmp, env={**os.environ, "MLFLOW_HOME": str(tmp)},
        start_new_session=True,  # its own process group: uvicorn's workers stop with it
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return server, url, found
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    stop(server)
    raise SystemExit(f"mlflow server did not start: {(tmp / 'mlflow.log').read_text()[-2000:]}")


def stop(server: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server's process group, SIGKILL after 20 s."""
    try:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=20)
    except ProcessLookupError:
        pass


def timed(context: Any, url: str, ready: Callable[[Any], None], shot: Path | None) -> float:
    """Seconds from navigation to ``ready`` on a new tab of ``context``."""
    page = context.new_page()
    start = time.perf_counter()
    page.goto(url, wait_until="commit")
    ready(page)
    elapsed = time.perf_counter() - start
    if shot is not None:
        page.screenshot(path=str(shot))
    page.close()
    return elapsed


def measure(browser: Any, url: str, ready: Callable[[Any], None], repeats: int,
            shot: Path | None, cookies: list[dict[str, Any]] | None = None,
            init: str = "") -> tuple[float, float]:  # fmt: skip
    """(cold, warm median) seconds: a fresh browser profile, then ``repeats`` new tabs."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    if cookies:
        context.add_cookies(cookies)
    if init:
        context.add_init_script(init)
    cold = timed(context, url, ready, shot)
    warm = statistics.median(timed(context, url, ready, None) for _ in range(repeats))
    context.close()
    return cold, warm


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--mlflow", type=Path, default=ROOT / ".venv-mlflow/bin/mlflow")
    parser.add_argument("--shots", type=Path, default=None, help="save a screenshot of each")
    args = parser.parse_args()
    if not args.mlflow.exists():
        raise SystemExit(f"no mlflow at {args.mlflow}: `make bench-dashboard` installs it")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        t0 = time.perf_counter()
        documents = varied_runs(tmp, args.runs)
        greenml, token = greenml_site(tmp, documents)
        t1 = time.perf_counter()
        mlflow, mlflow_url, logged = mlflow_site(tmp, args.mlflow, documents)
        t2 = time.perf_counter()
        print(f"{args.runs} runs loaded: greenml {t1 - t0:.0f} s, MLflow {t2 - t1:.0f} s")
        four = [d["record"]["id"] for d in documents[-4:]]
        four_mlflow = logged["ids"][-4:]
        experiment = logged["experiment"]
        shots = args.shots
        if shots:
            shots.mkdir(parents=True, exist_ok=True)
        try:
            session = httpx.post(greenml.url + "/login", data={"token": token},
                                 follow_redirects=False).cookies  # fmt: skip
            cookies = [{"name": k, "value": v, "url": greenml.url} for k, v in session.items()]
            pages = {
                ("runs list", "greenml"): (
                    f"{greenml.url}/runs", lambda p: p.locator("tbody tr").first.wait_for()),
                ("runs list", "MLflow"): (
                    f"{mlflow_url}/#/experiments/{experiment}",
                    lambda p: p.get_by_text(documents[-1]["record"]["name"]).first.wait_for()),
                ("compare 4 runs", "greenml"): (
                    f"{greenml.url}/compare?" + "&".join(f"item={i}" for i in four),
                    lambda p: p.locator("span[data-outcome]").first.wait_for()),
                ("compare 4 runs", "MLflow"): (
                    f"{mlflow_url}/#/compare-runs?runs={json.dumps(four_mlflow)}"
                    f"&experiments={json.dumps([experiment])}",
                    lambda p: p.get_by_text(four[-1], exact=True).first.wait_for()),
            }  # fmt: skip
            results: dict[tuple[str, str], tuple[float, float]] = {}
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path="/usr/bin/chromium",
                                             args=["--no-sandbox"])  # fmt: skip
                for (what, who), (url, ready) in pages.items():
                    shot = shots / f"{who}-{what.replace(' ', '-')}.png" if shots else None
                    results[what, who] = measure(
                        browser, url, ready, args.repeats, shot,
                        cookies if who == "greenml" else None,
                        "" if who == "greenml" else MLFLOW_MODE)
                browser.close()
        finally:
            greenml.stop()
            stop(mlflow)
    print(f"\nTime to first render in headless Chromium, {args.runs} runs "
          f"(cold: first visit; warm: median of {args.repeats} more)")
    print(f"{'page':<16}{'greenml cold':>14}{'MLflow cold':>13}{'ratio':>8}"
          f"{'greenml warm':>15}{'MLflow warm':>13}{'ratio':>8}")
    for what in ("runs list", "compare 4 runs"):
        (gc, gw), (mc, mw) = results[what, "greenml"], results[what, "MLflow"]
        print(f"{what:<16}{gc * 1000:>11.0f} ms{mc * 1000:>10.0f} ms{gc / mc:>8.2f}"
              f"{gw * 1000:>12.0f} ms{mw * 1000:>10.0f} ms{gw / mw:>8.2f}")
    print("ratio: greenml ÷ MLflow (below 1: greenml renders first)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

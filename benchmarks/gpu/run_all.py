"""Run the GPU validation parts, each in its own process with its own time budget.

    python3 benchmarks/gpu/run_all.py OUT_DIR [PART ...] [--cpu-smoke] [--cap SECONDS]

Parts (default: all, in this order): meter_vs_counter, llm_serving, sweep,
overhead, resilience_cuda, controls_dry_run. A part that fails, hangs or runs past its budget is
stopped (its whole process group) and recorded; the others still run. The whole
run stops starting parts when the overall cap (default 330 s) is near. With
``--cpu-smoke`` (a CPU, maybe a busy CI machine) every budget and the cap triple.

Writes three files into OUT_DIR: ``results.json`` (environment, every part's
status, exit code, wall time and figures), ``log.txt`` (every part's output) and
``tables.md`` (the parts' Markdown tables, ready for docs/validation.md).
No device setting is changed by any part.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
# Seconds per part on the GPU; the sum stays under the cap (330 s).
BUDGETS = {
    "meter_vs_counter": 55,
    "llm_serving": 105,
    "sweep": 70,
    "overhead": 45,
    "resilience_cuda": 35,
    "controls_dry_run": 20,
}
GRACE_S = 8  # after a part's budget: SIGTERM, then SIGKILL this much later


def run_part(name: str, budget: float, work: Path, smoke: bool, log: Any) -> dict[str, Any]:
    """One part in its own process group; its result file's content, plus rc and wall time."""
    cmd = [
        sys.executable,
        str(HERE / f"{name}.py"),
        "--out",
        str(work),
        "--budget",
        str(max(5.0, budget - GRACE_S)),
    ]
    if smoke:
        cmd.append("--cpu-smoke")
    log.write(f"\n===== {name} (budget {budget:.0f} s) $ {' '.join(cmd)}\n")
    log.flush()
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd, stdout=log, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True
    )
    timed_out = False
    try:
        rc = proc.wait(timeout=budget)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            rc = proc.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
    with_children_gone(proc.pid)
    wall = time.monotonic() - start
    result_file = work / f"{name}.json"
    result: dict[str, Any] = {}
    if result_file.exists():
        try:
            result = json.loads(result_file.read_text())
        except json.JSONDecodeError as exc:
            result = {"status": "failed", "reason": f"unreadable result: {exc}"}
    if not result:
        result = {"status": "failed", "reason": "no result written"}
    if timed_out:
        result["status"] = "timed out"
    elif rc != 0 and result.get("status") == "ok":
        result["status"] = "failed"
    result.update(rc=rc, driver_wall_s=round(wall, 1), budget_s=budget)
    log.write(f"===== {name}: {result['status']}, exit {rc}, {wall:.1f} s\n")
    log.flush()
    return result


def with_children_gone(pgid: int) -> None:
    """Kill what is left of a part's process group (a server it forgot)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def git_commit() -> str | None:
    """The checkout's commit, None where there is no git or no repository."""
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=REPO
        )
    except OSError:
        return None
    return proc.stdout.strip() or None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument(
        "parts", nargs="*", help=f"Parts to run (default all: {', '.join(BUDGETS)})."
    )
    parser.add_argument("--cpu-smoke", action="store_true", help="Short CPU runs, fake NVML.")
    parser.add_argument("--cap", type=float, default=330.0, help="Overall seconds (default 330).")
    args = parser.parse_args()
    unknown = [p for p in args.parts if p not in BUDGETS]
    if unknown:
        print(
            f"unknown part(s): {', '.join(unknown)}; known: {', '.join(BUDGETS)}", file=sys.stderr
        )
        return 2
    parts = args.parts or list(BUDGETS)
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="greenml-gpu-parts-"))
    # A smoke run is on a CPU, perhaps a busy CI box: three times the time for its imports.
    scale = 3.0 if args.cpu_smoke else 1.0
    deadline = time.monotonic() + args.cap * scale
    results: dict[str, Any] = {}
    with (args.out / "log.txt").open("a") as log:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        log.write(f"run_all {' '.join(sys.argv[1:])} at {now}\n")
        for name in parts:
            left = deadline - time.monotonic()
            budget = min(float(BUDGETS[name]) * scale, left)
            if budget < 15:
                results[name] = {"status": "not run", "reason": f"overall cap: {left:.0f} s left"}
                log.write(f"===== {name}: not run, {left:.0f} s left of the cap\n")
                continue
            print(f"[run_all] {name} (budget {budget:.0f} s) …", flush=True)
            results[name] = run_part(name, budget, work, args.cpu_smoke, log)
            done = results[name]
            print(f"[run_all] {name}: {done['status']} in {done['driver_wall_s']} s", flush=True)
    env = next(
        (
            r["figures"]["environment"]
            for r in results.values()
            if isinstance(r.get("figures"), dict) and "environment" in r["figures"]
        ),
        {},
    )
    summary = {
        "commit": git_commit(),
        "generated_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "smoke": args.cpu_smoke,
        "environment": env,
        "parts": results,
    }
    (args.out / "results.json").write_text(json.dumps(summary, indent=2) + "\n")
    tables = [
        f"## {name}: {r['status']}\n\n" + "\n".join(r.get("markdown") or [])
        for name, r in results.items()
    ]
    (args.out / "tables.md").write_text("\n".join(tables))
    for name, r in results.items():
        print(f"{name:18s} {r['status']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

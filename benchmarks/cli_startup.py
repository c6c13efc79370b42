"""Start-up of the ``greenml`` commands people wait for, next to a bare Python in the same run.

Targets (issue 35), each printed with its ratio and PASS/FAIL:

1. ``greenml run -q -- true`` ≤ 150 ms wall (median), and ≤ 1.3× the reference
   ``python -c pass`` followed by ``true`` (what any Python wrapper costs at least);
2. the read commands ``greenml runs list``, ``greenml runs show ID`` and ``greenml jobs show
   JOB`` ≤ 300 ms wall each on a SQLite store (ratio to ``python -c pass`` printed).

The floor of a command that parses its arguments with click (``python -c "import
click"``) is printed beside them: what any greenml command pays before its own work.

Commands run in turn (A B A B ...), each in a fresh process from a throw-away HOME and
store; a ``greenml run``'s detached writer is waited for before the next command is
timed (2 cores: its CPU would be charged to the next). Wall and CPU (user + sys, the
kernel's accounting of the finished process) are medians; the ratio is the median of
the pair-by-pair ratios, which holds when the machine's speed drifts. The exit code is
0 even when a target fails: this is a report, not a test.

Usage::

    python benchmarks/cli_startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PY = sys.executable
SRC = Path(__file__).resolve().parents[1] / "src"
RUN_TARGET_MS = 150.0
RUN_TARGET_RATIO = 1.3
READ_TARGET_MS = 300.0


def bench_env(home: Path, src: Path = SRC) -> dict[str, str]:
    """A throw-away HOME and store; no GREENML_* or CI setting of the caller's."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GREENML_") and k not in ("CI", "SLURM_JOB_ID")}  # fmt: skip
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"),
               XDG_CONFIG_HOME=str(home / "config"), XDG_CACHE_HOME=str(home / "cache"),
               GREENML_SPOOL_DIR=str(home / "spool"))  # fmt: skip
    env["PYTHONPATH"] = f"{src}{os.pathsep}{env.get('PYTHONPATH', '')}".rstrip(os.pathsep)
    return env


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s) of one run of ``argv`` as a finished process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read() if proc.stderr else b""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {err.decode()[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime


def settle(env: dict[str, str], limit_s: float = 15.0) -> None:
    """Wait until the detached writer of the last ``greenml run`` has stored its run."""
    spool = Path(env["GREENML_SPOOL_DIR"])
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and spool.is_dir() and any(
            p.suffix == ".json" or p.name.endswith(".claim") for p in spool.iterdir()):
        time.sleep(0.02)
    time.sleep(0.15)  # the writer's exit


def pairs(a: list[str], b: list[str], runs: int, env: dict[str, str],
          settle_after_a: bool = False) -> dict[str, float]:  # fmt: skip
    """A and B in turn after one warm-up each: medians (ms) and the pairwise ratio."""
    walls: dict[str, list[float]] = {"a": [], "b": []}
    cpus: dict[str, list[float]] = {"a": [], "b": []}
    for i in range(runs + 1):
        for key, argv in (("a", a), ("b", b)):
            wall, cpu = timed(argv, env)
            if settle_after_a and key == "a":
                settle(env)
            if i:
                walls[key].append(wall)
                cpus[key].append(cpu)
    ratios = [x / y for x, y in zip(walls["a"], walls["b"], strict=True)]
    return {"a_ms": 1e3 * statistics.median(walls["a"]),
            "b_ms": 1e3 * statistics.median(walls["b"]),
            "a_cpu_ms": 1e3 * statistics.median(cpus["a"]),
            "b_cpu_ms": 1e3 * statistics.median(cpus["b"]),
            "ratio": statistics.median(ratios)}  # fmt: skip


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="counted runs of each command")
    parser.add_argument("--src", type=Path, default=SRC, help="greenml sources to time "
                        "(another checkout's src/, for a before/after)")  # fmt: skip
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="greenml-bench-cli-") as tmp:
        env = bench_env(Path(tmp), args.src)
        cli = [PY, "-m", "greenml"]
        reference = ["sh", "-c", f"{PY} -c pass && true"]
        run = pairs([*cli, "run", "-q", "--", "true"], reference, args.runs, env, True)
        for rank in (0, 1):  # a job of two nodes, for `jobs show`
            timed([*cli, "run", "-q", "--job", "J1", "--node-rank", str(rank), "--job-nodes",
                   "2", "--", "true"], env)  # fmt: skip
            settle(env)
        listed = subprocess.run([*cli, "runs", "list", "--json", "-n", "1"], env=env, text=True,
                                capture_output=True, check=True).stdout  # fmt: skip
        run_id = json.loads(listed.splitlines()[0])["id"]
        bare = [PY, "-c", "pass"]
        # the floor of any command built on greenml's argument parser: importing it
        parser_floor = pairs([PY, "-c", "import click"], bare, args.runs, env)
        reads = {name: pairs([*cli, *words], bare, args.runs, env) for name, words in (
            ("greenml runs list", ["runs", "list"]),
            ("greenml runs show ID", ["runs", "show", run_id]),
            ("greenml jobs show JOB", ["jobs", "show", "J1"]))}  # fmt: skip
    print(f"greenml CLI start-up; {args.runs} runs of each, medians; "
          f"python {sys.version.split()[0]}")
    ok = run["a_ms"] <= RUN_TARGET_MS and run["ratio"] <= RUN_TARGET_RATIO
    print(f"  reference `python -c pass && true`: {run['b_ms']:.0f} ms wall, "
          f"{run['b_cpu_ms']:.0f} ms CPU")
    print(f"TARGET greenml run -q -- true: {run['a_ms']:.0f} ms wall "
          f"({run['a_cpu_ms']:.0f} ms CPU), "
          f"ratio {run['ratio']:.2f}x the reference -> {verdict(ok)} "
          f"(target <= {RUN_TARGET_MS:.0f} ms and <= {RUN_TARGET_RATIO}x)")  # fmt: skip
    print(f"  floor of a click command `python -c 'import click'`: {parser_floor['a_ms']:.0f} ms "
          f"wall, {parser_floor['ratio']:.2f}x `python -c pass` (the parser alone, before any "
          "work: below 1.3x only without the parser greenml's commands share)")
    for name, r in reads.items():
        print(f"TARGET {name}: {r['a_ms']:.0f} ms wall ({r['a_cpu_ms']:.0f} ms CPU), "
              f"ratio {r['ratio']:.2f}x `python -c pass` ({r['b_ms']:.0f} ms) -> "
              f"{verdict(r['a_ms'] <= READ_TARGET_MS)} (target <= {READ_TARGET_MS:.0f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

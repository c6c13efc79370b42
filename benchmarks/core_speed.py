"""Core speed of greenml next to CodeCarbon 3.3.2, both measured in the same run.

Four targets from the issue, each printed with PASS/FAIL and the ratio
greenml / CodeCarbon (below 1: greenml is cheaper):

1. CPU time of an idle Meter sampling at 1 Hz (≤ 0.05 % of one core) and 10 Hz (≤ 0.3 %);
2. one ``begin_window`` + ``end_window`` pair with 8 fake GPUs and the CPU sensors (≤ 50 µs);
3. ``python -c "import greenml"`` (≤ 60 ms, and no heavy module imported);
4. ``greenml run -q -- true`` end to end, less ``true`` itself (≤ 300 ms).

Every measurement runs in a fresh subprocess (this script in ``--worker`` mode).
The exit code is 0 even when a target fails: this is a report, not a test.

Usage::

    python benchmarks/core_speed.py [--quick] [--duration S] [--json FILE]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

CODECARBON_VERSION = "3.3.2"
HEAVY_MODULES = ("torch", "pandas", "sqlalchemy", "matplotlib", "plotly", "numpy", "httpx")
SCRIPT = Path(__file__).resolve()
PY = sys.executable


# ----------------------------------------------------------------------------- workers
# Each worker runs in its own fresh process and returns a JSON-able dict.


def _cpu_s() -> float:
    """User + system CPU seconds of this process, all threads included."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _idle(duration: float) -> dict[str, float]:
    """CPU and wall seconds spent while this process sleeps for ``duration``.

    Says ``ready`` on stdout first and waits for a line on stdin, so that every
    idle process measures the same span, after all of them have started.
    """
    print("ready", flush=True)
    sys.stdin.readline()
    cpu0, wall0 = _cpu_s(), time.perf_counter()
    time.sleep(duration)
    return {"cpu_s": _cpu_s() - cpu0, "wall_s": time.perf_counter() - wall0}


def _cc_tracker(measure_power_secs: float | None = 1.0) -> Any:
    """An offline CodeCarbon tracker that writes nothing (``None``: its default interval)."""
    from codecarbon import OfflineEmissionsTracker

    kwargs: dict[str, Any] = {
        "country_iso_code": "USA", "save_to_file": False, "log_level": "error",
    }
    if measure_power_secs is not None:
        kwargs["measure_power_secs"] = measure_power_secs
    return OfflineEmissionsTracker(**kwargs)


def worker_idle_baseline(duration: float) -> dict[str, Any]:
    """A process that only sleeps."""
    return _idle(duration)


def worker_idle_greenml(duration: float, hz: float) -> dict[str, Any]:
    """An idle Meter on the machine's real sensors."""
    from greenml import Meter

    meter = Meter(sample_hz=hz)
    result: dict[str, Any] = _idle(duration)
    meter.close()
    return {**result, "devices": [f"{d.key}: {d.name}" for d in meter.devices]}


def worker_idle_codecarbon(duration: float, measure_power_secs: float | None) -> dict[str, Any]:
    """An idle, started OfflineEmissionsTracker."""
    tracker = _cc_tracker(measure_power_secs)
    tracker.start()
    result = _idle(duration)
    tracker.stop()
    return result


def _window_meter() -> tuple[Any, Any]:
    """A Meter over 8 fake GPUs with energy counters and the machine's CPU sensors, at 1 Hz.

    Returns the Meter and the fake GPU sensor.
    """
    from greenml import Meter
    from greenml.measure.sensors.discover import discover_cpu_sensors
    from greenml.measure.sensors.fake import FakeDevice, FakeSensor

    gpus = FakeSensor([FakeDevice(f"gpu{i}", [(0.0, 300.0), (3600.0, 350.0)]) for i in range(8)])
    cpu_sensors, _ = discover_cpu_sensors()
    return Meter(sensors=[gpus, *cpu_sensors], sample_hz=1.0), gpus


def _per_pair_us(times_s: Sequence[float], pairs: int) -> dict[str, Any]:
    per_pair = [t / pairs * 1e6 for t in times_s]
    return {"median_us": statistics.median(per_pair), "best_us": min(per_pair), "all_us": per_pair}


def worker_window_greenml(pairs: int, repeats: int) -> dict[str, Any]:
    """``begin_window`` + ``end_window`` pairs, timeit-style (GC off while timing)."""
    meter, gpus = _window_meter()
    timer = timeit.Timer("b('w'); e('w')", globals={"b": meter.begin_window, "e": meter.end_window})
    timer.timeit(number=min(pairs, 1000))  # warm up
    result = _per_pair_us(timer.repeat(repeat=repeats, number=pairs), pairs)
    reads = timeit.Timer("r()", globals={"r": gpus.read_energy_j})
    read_us = _per_pair_us(reads.repeat(repeat=repeats, number=pairs), pairs)["median_us"]
    meter.close()
    return {**result, "fake_read_energy_us": read_us, "devices": [d.key for d in meter.devices]}


def worker_window_codecarbon(pairs: int, repeats: int) -> dict[str, Any]:
    """``start_task`` + ``stop_task`` pairs on a started tracker (1 s interval)."""
    tracker = _cc_tracker(1.0)
    tracker.start()
    tracker.start_task()
    tracker.stop_task()  # the first pair pauses the scheduler: not counted
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(pairs):
            tracker.start_task()
            tracker.stop_task()
        times.append(time.perf_counter() - t0)
    tracker.stop()
    return _per_pair_us(times, pairs)


def _timed_cycles(cycle: Callable[[], None], reps: int) -> dict[str, Any]:
    """Seconds of the first cycle in this process and of the ones after it."""
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        cycle()
        times.append(time.perf_counter() - t0)
    return {"first_s": times[0], "again_s": times[1:]}


def worker_startstop_greenml(reps: int) -> dict[str, Any]:
    """``Meter()`` (sensor discovery + sampler start) then ``close()``."""
    from greenml import Meter

    return _timed_cycles(lambda: Meter(sample_hz=1.0).close(), reps)


def worker_startstop_codecarbon(reps: int) -> dict[str, Any]:
    """A new tracker, ``start()`` (hardware detection) then ``stop()``."""
    import codecarbon  # noqa: F401  - import time is measured elsewhere

    def cycle() -> None:
        tracker = _cc_tracker(1.0)
        tracker.start()
        tracker.stop()

    return _timed_cycles(cycle, reps)


WORKERS: dict[str, Callable[..., dict[str, Any]]] = {
    "idle-baseline": worker_idle_baseline,
    "idle-greenml": worker_idle_greenml,
    "idle-codecarbon": worker_idle_codecarbon,
    "window-greenml": worker_window_greenml,
    "window-codecarbon": worker_window_codecarbon,
    "startstop-greenml": worker_startstop_greenml,
    "startstop-codecarbon": worker_startstop_codecarbon,
}


# ----------------------------------------------------------------------------- plumbing


class BenchError(RuntimeError):
    """A measured command or worker failed; ``reason`` is its last line of stderr."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


@dataclass(frozen=True)
class Config:
    """How long and how often to measure."""

    quick: bool
    idle_s: float
    idle_replicas: int
    window_pairs: int
    window_repeats: int
    task_pairs: int
    task_repeats: int
    startstop_procs: int
    import_runs: int
    cli_runs: int

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Config:
        q = args.quick
        idle_s = args.duration if args.duration is not None else (10.0 if q else 30.0)
        return cls(
            quick=q, idle_s=idle_s, idle_replicas=1 if q else 3,
            window_pairs=5000 if q else 20000, window_repeats=3 if q else 5,
            task_pairs=30 if q else 50, task_repeats=3 if q else 5, startstop_procs=1 if q else 3,
            import_runs=7 if q else 15, cli_runs=5 if q else 10,
        )


@dataclass
class Row:
    """One line of the report; values in ``unit``, lower is better."""

    metric: str
    unit: str
    target: float | None
    greenml: float | None
    codecarbon: float | None
    greenml_text: str = ""
    codecarbon_text: str = ""
    passed: bool | None = None  # None: informational

    def __post_init__(self) -> None:
        if self.passed is None and self.target is not None and self.greenml is not None:
            self.passed = self.greenml <= self.target

    @property
    def ratio(self) -> float | None:
        if self.greenml is None or not self.codecarbon:
            return None
        return self.greenml / self.codecarbon


@dataclass
class Report:
    """Everything measured, for the table and ``--json``."""

    rows: list[Row] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def bench_env(tmp: Path) -> dict[str, str]:
    """Environment of every child: a throw-away run store, quiet CodeCarbon."""
    env = dict(os.environ)
    env["GREENML_DB"] = str(tmp / "runs.db")
    env["GREENML_SPOOL_DIR"] = str(tmp / "spool")
    env["CODECARBON_LOG_LEVEL"] = "error"
    return env


def settle(env: dict[str, str], limit_s: float = 10.0) -> None:
    """Wait until the detached writer of the last ``greenml run`` has stored its run.

    A short command's run is stored after greenml has returned; timing the next
    command while that writer still runs would charge its CPU to the next one
    (there are only 2 cores), so each command is timed on a quiet machine.
    """
    spool = Path(env["GREENML_SPOOL_DIR"])
    deadline = time.monotonic() + limit_s
    while spool.is_dir() and any(spool.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)  # the writer's exit


def spawn(worker: str, env: dict[str, str], **params: Any) -> subprocess.Popen[str]:
    """Start this script in worker mode (stdin is a pipe, for the idle workers' barrier)."""
    cmd = [PY, str(SCRIPT), "--worker", worker, "--params", json.dumps(params)]
    return subprocess.Popen(
        cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )


def collect(proc: subprocess.Popen[str], timeout: float) -> dict[str, Any]:
    """The JSON a worker printed; :class:`BenchError` if it failed."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise BenchError(f"worker {proc.args[3]} timed out after {timeout:.0f} s") from None
    if proc.returncode != 0:
        raise BenchError(f"worker {proc.args[3]} failed (exit {proc.returncode}): {_tail(err)}",
                         _tail(err, 1))
    return json.loads(out.strip().splitlines()[-1])


def run_worker(worker: str, env: dict[str, str], **params: Any) -> dict[str, Any]:
    return collect(spawn(worker, env, **params), timeout=300)


def _tail(text: str, lines: int = 5) -> str:
    return " | ".join(text.strip().splitlines()[-lines:]) or "(no output)"


def wall_s(cmd: Sequence[str], env: dict[str, str]) -> float:
    """Wall seconds of one command; :class:`BenchError` if it exits non-zero."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False
    )
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise BenchError(f"{' '.join(cmd)} exited {proc.returncode}: {_tail(proc.stderr)}",
                         _tail(proc.stderr, 1))
    return elapsed


def median_walls(
    cmds: dict[str, list[str]], runs: int, env: dict[str, str], report: Report
) -> dict[str, float | None]:
    """Median wall ms of each command, interleaved so drift hits all alike; one warm-up each.

    A failing CodeCarbon command is noted and dropped (``None``); any other failure raises.
    """
    active = dict(cmds)
    times: dict[str, list[float]] = {name: [] for name in cmds}

    def timed(name: str) -> None:
        settle(env)
        try:
            times[name].append(wall_s(active[name], env))
        except BenchError as exc:
            if name != "codecarbon":
                raise
            report.notes.append(f"CodeCarbon command dropped: {exc.reason}")
            del active[name]
            times[name] = []

    for name in list(active):
        timed(name)
    for name in times:
        times[name] = []
    for _ in range(runs):
        for name in list(active):
            timed(name)
    report.details.setdefault("wall_s", {})[" | ".join(cmds)] = times
    return {name: 1e3 * statistics.median(ts) if ts else None for name, ts in times.items()}


def _less(value: float | None, base: float | None) -> float | None:
    return None if value is None or base is None else value - base


def codecarbon_version() -> str | None:
    """The installed CodeCarbon version, or ``None`` when it is not importable."""
    if importlib.util.find_spec("codecarbon") is None:
        return None
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("codecarbon")
    except PackageNotFoundError:
        return "unknown"


def greenml_cli() -> tuple[list[str], list[str]]:
    """(argv to run the greenml CLI, argv tail to run it under ``python [flags]``)."""
    script = Path(PY).with_name("greenml")
    if script.is_file():
        return [str(script)], [str(script)]
    return [PY, "-m", "greenml"], ["-m", "greenml"]


def _progress(message: str) -> None:
    print(f"core_speed: {message}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- benchmarks


def _pct(sample: dict[str, float]) -> float:
    return 100.0 * sample["cpu_s"] / sample["wall_s"]


def bench_idle(cfg: Config, cc: bool, env: dict[str, str], report: Report) -> None:
    """Target 1: CPU of an idle Meter / tracker, all processes side by side, less a sleeper."""
    d, n = cfg.idle_s, cfg.idle_replicas
    specs: dict[str, tuple[str, dict[str, Any]]] = {
        "baseline": ("idle-baseline", {"duration": d}),
        "greenml_1hz": ("idle-greenml", {"duration": d, "hz": 1.0}),
        "greenml_10hz": ("idle-greenml", {"duration": d, "hz": 10.0}),
    }
    if cc:
        specs["codecarbon_1s"] = ("idle-codecarbon", {"duration": d, "measure_power_secs": 1.0})
        specs["codecarbon_15s"] = ("idle-codecarbon", {"duration": d, "measure_power_secs": None})
    _progress(f"idle sampling overhead: {len(specs) * n} processes side by side, {d:g} s each")
    procs = {name: [spawn(w, env, **kw) for _ in range(n)] for name, (w, kw) in specs.items()}
    _release([p for group in procs.values() for p in group])
    raw = {name: [_collect_side(name, p, d + 120, report) for p in group]
           for name, group in procs.items()}
    if not all(raw["baseline"]):
        raise BenchError("the baseline sleeper failed")
    base = statistics.median(_pct(s) for s in raw["baseline"])
    pct = {name: _median_pct(samples, base) for name, samples in raw.items()}
    report.details["idle"] = {"raw": raw, "overhead_pct": pct, "baseline_pct": base}
    report.rows += [
        Row("idle CPU, 1 Hz (CC: 1 s interval)", "%", 0.05, pct["greenml_1hz"],
            pct.get("codecarbon_1s")),
        Row("idle CPU, 10 Hz (CC: no 10 Hz peer)", "%", 0.3, pct["greenml_10hz"], None),
        Row("idle CPU, defaults (1 Hz vs CC 15 s)", "%", None, pct["greenml_1hz"],
            pct.get("codecarbon_15s")),
    ]


def _release(procs: list[subprocess.Popen[str]]) -> None:
    """Wait until every idle worker is ready, then let them all measure at once."""
    for proc in procs:
        # The worker blocks on stdin right after this line, so nothing else is buffered
        # and communicate() later reads the rest of stdout intact.
        assert proc.stdout is not None
        proc.stdout.readline()  # "ready", or "" if it died (collect() reports it)
    for proc in procs:
        try:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        except BrokenPipeError:
            pass  # it died: collect() reports it


def _median_pct(samples: list[dict[str, float] | None], base: float) -> float | None:
    """Median % of one core over the replicas that worked, less the sleeper's."""
    ok = [_pct(s) for s in samples if s]
    return statistics.median(ok) - base if ok else None


def _collect_side(name: str, proc: subprocess.Popen[str], timeout: float, report: Report) -> Any:
    """A worker's result; a CodeCarbon failure is noted, a greenml failure raised."""
    try:
        return collect(proc, timeout)
    except BenchError as exc:
        if not name.startswith("codecarbon"):
            raise
        report.notes.append(f"CodeCarbon {name} failed: {exc.reason}")
        return None


def _cc_run(worker: str, env: dict[str, str], report: Report, **params: Any) -> Any:
    return _collect_side(f"codecarbon ({worker})", spawn(worker, env, **params), 300, report)


def bench_window(cfg: Config, cc: bool, env: dict[str, str], report: Report) -> None:
    """Target 2: a window pair; CodeCarbon's start_task/stop_task; start+stop of each."""
    _progress(f"window pairs ({cfg.window_pairs} x {cfg.window_repeats}) and start/stop cycles")
    gm = run_worker("window-greenml", env, pairs=cfg.window_pairs, repeats=cfg.window_repeats)
    task = _cc_run("window-codecarbon", env, report, pairs=cfg.task_pairs,
                   repeats=cfg.task_repeats) if cc else None
    report.details["window"] = {"greenml": gm, "codecarbon_task": task}
    report.rows.append(Row(
        "window pair, 8 fake GPUs + CPU (CC: task)", "µs", 50.0, gm["median_us"],
        task["median_us"] if task else None,
        greenml_text=f"{gm['median_us']:.1f} µs (best {gm['best_us']:.1f})",
        codecarbon_text=f"{task['median_us']:.0f} µs (best {task['best_us']:.0f})" if task else "",
    ))
    _bench_startstop(cfg, cc, env, report)


def _bench_startstop(cfg: Config, cc: bool, env: dict[str, str], report: Report) -> None:
    reps = 3
    gm = [run_worker("startstop-greenml", env, reps=reps) for _ in range(cfg.startstop_procs)]
    cc_raw = [_cc_run("startstop-codecarbon", env, report, reps=reps)
              for _ in range(cfg.startstop_procs)] if cc else []
    cc_ok = [r for r in cc_raw if r]
    report.details["startstop"] = {"greenml": gm, "codecarbon": cc_raw}

    def first(rs: list[dict[str, Any]]) -> float | None:
        return 1e3 * statistics.median(r["first_s"] for r in rs) if rs else None

    def again(rs: list[dict[str, Any]]) -> float | None:
        return 1e3 * statistics.median(t for r in rs for t in r["again_s"]) if rs else None

    report.rows += [
        Row("Meter()+close() vs start()+stop(), 1st", "ms", None, first(gm), first(cc_ok)),
        Row("Meter()+close() vs start()+stop(), again", "ms", None, again(gm), again(cc_ok)),
    ]


def heavy_imported(module: str, env: dict[str, str]) -> list[str]:
    """Which of HEAVY_MODULES a fresh ``import module`` pulls in."""
    names = repr(HEAVY_MODULES)
    code = f"import sys, {module}; print(','.join(m for m in {names} if m in sys.modules))"
    out = subprocess.run([PY, "-c", code], env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise BenchError(f"import {module} failed: {_tail(out.stderr)}", _tail(out.stderr, 1))
    return [m for m in out.stdout.strip().split(",") if m]


def bench_import(cfg: Config, cc: bool, env: dict[str, str], report: Report) -> None:
    """Target 3: ``import greenml`` wall time over ``pass``, and what it drags in."""
    _progress(f"import time, median of {cfg.import_runs} fresh interpreters")
    cmds = {"pass": [PY, "-c", "pass"], "greenml": [PY, "-c", "import greenml"]}
    if cc:
        cmds["codecarbon"] = [PY, "-c", "import codecarbon"]
    med = median_walls(cmds, cfg.import_runs, env, report)
    gm_heavy = heavy_imported("greenml", env)
    cc_heavy = None
    if cc:
        try:
            cc_heavy = heavy_imported("codecarbon", env)
        except BenchError as exc:
            report.notes.append(f"CodeCarbon heavy-module check failed: {exc.reason}")
    report.details["import"] = {"median_ms": med,
                                "heavy": {"greenml": gm_heavy, "codecarbon": cc_heavy}}
    report.rows += [
        Row("import time (less `python -c pass`)", "ms", 60.0, _less(med["greenml"], med["pass"]),
            _less(med.get("codecarbon"), med["pass"])),
        Row("heavy modules on import", "", None, None, None,
            greenml_text=", ".join(gm_heavy) or "none",
            codecarbon_text=", ".join(cc_heavy) if cc_heavy else ("none" if cc else ""),
            passed=not gm_heavy),
    ]


CC_WRAPPER = """
import subprocess
from codecarbon import OfflineEmissionsTracker
tracker = OfflineEmissionsTracker(country_iso_code="USA", log_level="error", output_dir={out!r})
tracker.start()
subprocess.run(["true"], check=True)
tracker.stop()
"""


def bench_run(cfg: Config, cc: bool, env: dict[str, str], tmp: Path, report: Report) -> None:
    """Target 4: ``greenml run -q -- true`` less ``true``; peer: ``true`` in a tracker."""
    _progress(f"`greenml run -q -- true`, median of {cfg.cli_runs}")
    cli, _ = greenml_cli()
    cmds = {"true": ["true"], "greenml": [*cli, "run", "-q", "--", "true"]}
    if cc:
        cmds["codecarbon"] = [PY, "-c", CC_WRAPPER.format(out=str(tmp))]
    med = median_walls(cmds, cfg.cli_runs, env, report)
    report.details["run"] = {"median_ms": med}
    report.rows.append(Row(
        "`greenml run -q -- true` (less `true`)", "ms", 300.0, _less(med["greenml"], med["true"]),
        _less(med.get("codecarbon"), med["true"]),
    ))
    _progress("breakdown of `greenml run -- true` (-X importtime, cProfile)")
    report.details["run_breakdown"] = run_breakdown(env, tmp)


# Profiles ``greenml.cli.main`` like the console script runs it; ``greenml run`` ends
# with ``os._exit`` (skipping teardown), so the profile is written from there too.
PROFILE_DRIVER = """
import cProfile, os, sys
out, args = sys.argv[1], sys.argv[2:]
profile = cProfile.Profile()
real_exit = os._exit
def dump_and_exit(code):
    profile.disable()
    profile.dump_stats(out)
    real_exit(code)
os._exit = dump_and_exit
profile.enable()
from greenml.cli import main
code = main(args)
dump_and_exit(code)
"""


def run_breakdown(env: dict[str, str], tmp: Path) -> dict[str, Any]:
    """Where ``greenml run -q -- true`` spends its time: imports by package, main-thread profile."""
    _, tail = greenml_cli()
    args = ["run", "-q", "--", "true"]
    proc = subprocess.run([PY, "-X", "importtime", *tail, *args], env=env, capture_output=True,
                          text=True, check=False)
    by_pkg = importtime_by_package(proc.stderr)
    prof = tmp / "run.prof"
    subprocess.run([PY, "-c", PROFILE_DRIVER, str(prof), *args], env=env, capture_output=True,
                   check=False)
    return {
        "imports_total_ms": sum(by_pkg.values()),
        "imports_by_package_ms": dict(sorted(by_pkg.items(), key=lambda kv: -kv[1])[:8]),
        "profile_greenml_cum_ms": greenml_profile(prof) if prof.exists() else {},
    }


def importtime_by_package(stderr: str) -> dict[str, float]:
    """Milliseconds of own import time per top-level package, from ``-X importtime``."""
    totals: dict[str, float] = {}
    for line in stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        parts = line.split("|")
        self_us = parts[0].removeprefix("import time:").strip()
        if len(parts) != 3 or not self_us.isdigit():
            continue
        root = parts[2].strip().split(".")[0]
        totals[root] = totals.get(root, 0.0) + int(self_us) / 1e3
    return totals


def greenml_profile(path: Path, top: int = 12) -> dict[str, float]:
    """Cumulative ms of greenml's own functions (main thread), the largest first."""
    stats: dict[Any, Any] = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
    out: dict[str, float] = {}
    marker = f"{os.sep}greenml{os.sep}"
    for (filename, line, func), (_, _, _, cumtime, _) in stats.items():
        if marker in filename and func != "<module>":
            rel = filename.rsplit(marker, 1)[1]
            out[f"{rel}:{line} {func}"] = 1e3 * cumtime
    return dict(sorted(out.items(), key=lambda kv: -kv[1])[:top])


# ----------------------------------------------------------------------------- output


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit == "%":
        return f"{value:.3f} %"
    return f"{value:.1f} {unit}" if abs(value) < 100 else f"{value:.0f} {unit}"


def _fmt_target(row: Row) -> str:
    if row.target is None:
        return "none" if row.unit == "" and row.passed is not None else "—"
    return f"≤ {row.target:g} {row.unit}"


def _verdict(row: Row) -> str:
    return "info" if row.passed is None else ("PASS" if row.passed else "FAIL")


def print_table(report: Report, cc_version: str | None, cfg: Config) -> None:
    """The report as a plain-text table on stdout."""
    head = ("metric", "target", "greenml", f"CodeCarbon {cc_version or '(missing)'}", "greenml/CC",
            "verdict")
    lines = [head]
    for row in report.rows:
        ratio = f"{row.ratio:.3g}×" if row.ratio is not None else "—"
        lines.append((
            row.metric, _fmt_target(row), row.greenml_text or _fmt(row.greenml, row.unit),
            row.codecarbon_text or _fmt(row.codecarbon, row.unit), ratio, _verdict(row),
        ))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    mode = "quick" if cfg.quick else "full"
    print(f"\ngreenml core speed vs CodeCarbon — {mode} run, idle {cfg.idle_s:g} s, "
          f"Python {platform.python_version()}, {os.cpu_count()} CPUs")
    for i, line in enumerate(lines):
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print_details(report)


def print_details(report: Report) -> None:
    """Sensors used, the idle raw figures, and where `greenml run` spends its time."""
    idle = report.details["idle"]
    print(f"\ngreenml idle sensors: {'; '.join(idle['raw']['greenml_1hz'][0]['devices'])}")
    for name, samples in idle["raw"].items():
        each = ", ".join(f"{_pct(s):.3f}" if s else "failed" for s in samples)
        print(f"  idle {name}: % of one core per process {each}")
    print(f"  (the sleeper's {idle['baseline_pct']:.4f} % is subtracted in the table)")
    win = report.details["window"]["greenml"]
    own = win["median_us"] - 2 * win["fake_read_energy_us"]
    print(f"window pair: 2 × FakeSensor.read_energy_j (8 GPUs) = "
          f"{2 * win['fake_read_energy_us']:.1f} µs; the Meter's own work ≈ {own:.1f} µs")
    breakdown = report.details.get("run_breakdown")
    if breakdown:
        pkgs = ", ".join(f"{k} {v:.0f}" for k, v in breakdown["imports_by_package_ms"].items())
        total = breakdown["imports_total_ms"]
        print(f"\n`greenml run -q -- true`, one run: imports {total:.0f} ms in all threads "
              f"(own time per package, ms: {pkgs})")
        print("greenml functions, cumulative ms (cProfile: main thread only, overhead included):")
        for name, ms in breakdown["profile_greenml_cum_ms"].items():
            print(f"  {ms:7.0f}  {name}")
    for note in report.notes:
        print(f"note: {note}")


def write_json(path: Path, report: Report, cc_version: str | None, cfg: Config) -> None:
    rows = [{**asdict(r), "ratio": r.ratio, "verdict": _verdict(r)} for r in report.rows]
    doc = {
        "config": asdict(cfg), "python": platform.python_version(), "cpus": os.cpu_count(),
        "codecarbon_version": cc_version, "rows": rows, "details": report.details,
        "notes": report.notes,
    }
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


# ----------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter run (about a minute)")
    parser.add_argument("--duration", type=float, help="idle seconds (default 30, quick 10)")
    parser.add_argument("--json", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    parser.add_argument("--params", default="{}", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def check_codecarbon() -> str | None:
    """CodeCarbon's version; says how to get it when it is missing or another version."""
    version = codecarbon_version()
    if version is None:
        print(f"core_speed: codecarbon is not importable; run `make bench` (it installs "
              f"codecarbon=={CODECARBON_VERSION}). Measuring greenml only.", file=sys.stderr)
    elif version != CODECARBON_VERSION:
        print(f"core_speed: codecarbon {version} installed; the peer figures are meant for "
              f"{CODECARBON_VERSION}.", file=sys.stderr)
    return version


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        print(json.dumps(WORKERS[args.worker](**json.loads(args.params))))
        return 0
    cfg = Config.from_args(args)
    cc_version = check_codecarbon()
    cc = cc_version is not None
    report = Report()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="greenml-bench-") as tmp_name:
        tmp = Path(tmp_name)
        env = bench_env(tmp)
        bench_idle(cfg, cc, env, report)
        bench_window(cfg, cc, env, report)
        bench_import(cfg, cc, env, report)
        bench_run(cfg, cc, env, tmp, report)
    report.details["elapsed_s"] = time.perf_counter() - t0
    print_table(report, cc_version, cfg)
    print(f"\n(total {report.details['elapsed_s']:.0f} s)")
    if args.json:
        write_json(args.json, report, cc_version, cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main())

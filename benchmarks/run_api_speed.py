"""Speed of ``greenml.Run``, side by side with CodeCarbon 3.3.2's ``EmissionsTracker``.

Targets (issue 17):

* ``Run`` start + stop ≤ 20 ms (median, warm: the store opened once in the process;
  timed 1 s apart, as a run lasts; ``stop(wait=False)``: the store is written by a
  background thread; also printed: stop right after start, and a stop that waits
  until the run is stored);
  CodeCarbon's ``start()`` alone takes over a second on a small machine;
* a window inside a Run ≤ 50 µs (median), next to CodeCarbon's ``start_task``/``stop_task``;
* an MLflow sink adds ≤ 1 ms per logged window (batched ``log_batch``, local file store).

Both tools measure this machine's real sensors (here: the CPU model or RAPL) with
their defaults, store nothing to the network, and write to a temporary folder.
CodeCarbon is the offline tracker with a fixed country (no geolocation request);
its ``start()`` and ``stop()`` are what a user's script waits for. The cold figures
(the first Run of a process pays for opening the store: SQLAlchemy, the schema) are
printed too. The exit code is 0 even when a target fails: this is a report.

Usage::

    pip install 'greenml[bench,mlflow]'
    python benchmarks/run_api_speed.py [--repeats N] [--windows N]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TARGET_START_STOP_S = 0.020
TARGET_WINDOW_S = 50e-6
TARGET_MLFLOW_PER_WINDOW_S = 0.001


def median_of(times: list[float]) -> float:
    return statistics.median(times) if times else float("nan")


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def greenml_start_stop(folder: Path, repeats: int) -> dict[str, float]:
    """Cold (first Run of the process) and warm medians: start alone, start + stop as the
    script waits for it (``stop(wait=False)``: stored by a background thread), and start +
    stop that waits until the run is stored and ledgered."""
    import greenml

    db = str(folder / "runs.db")
    cold = timed(lambda: greenml.Run("bench", ci=300, db=db).start().stop())
    handed, stored, starts, settled = [], [], [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run = greenml.Run("bench", ci=300, db=db).start()
        t1 = time.perf_counter()
        time.sleep(1.0)  # a run lasts: its store opens and its environment is read meanwhile
        t2 = time.perf_counter()
        run.stop(wait=False)
        settled.append(t1 - t0 + time.perf_counter() - t2)
        run.wait()
        t0 = time.perf_counter()
        run = greenml.Run("bench", ci=300, db=db).start()
        t1 = time.perf_counter()
        run.stop(wait=False)
        handed.append(time.perf_counter() - t0)
        starts.append(t1 - t0)
        run.wait()
        t0 = time.perf_counter()
        greenml.Run("bench", ci=300, db=db).start().stop()
        stored.append(time.perf_counter() - t0)
    return {"cold": cold, "handed": median_of(handed), "stored": median_of(stored),
            "start": median_of(starts), "settled": median_of(settled)}  # fmt: skip


def greenml_window(folder: Path, n: int) -> float:
    import greenml

    with greenml.Run("bench-windows", ci=300, db=str(folder / "runs.db")) as run:
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            with run.window("step"):
                pass
            times.append(time.perf_counter() - t0)
    return median_of(times)


def mlflow_per_window(folder: Path, n: int) -> tuple[float, float] | None:
    """(window cost in the loop with the sink on, sink's own logging time per window)."""
    try:
        import mlflow  # noqa: F401
    except ImportError:
        return None
    import greenml
    from greenml.run.window_feed import WindowFeed
    from greenml.trackers.mlflow import MlflowSink

    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    os.environ["MLFLOW_TRACKING_URI"] = (folder / "mlruns").as_uri()
    with greenml.Run("bench-mlflow", ci=300, db=str(folder / "runs.db"), log_to=["mlflow"]) as run:
        loop = []
        for _ in range(n):
            t0 = time.perf_counter()
            with run.window("step"):
                pass
            loop.append(time.perf_counter() - t0)
        windows = [w for w in run._windows if w.name == "step"]
    # the sink alone: batches of every window since the last tick, as the run's thread sends
    sink = MlflowSink(run_name="bench-sink")
    sink.log_windows([])  # opens the client and the run: paid once per run, not per window
    feed = WindowFeed(None, [sink], lambda key, message: print(message))
    feed.g_per_kwh, feed.usd_per_kwh = 300.0, 0.2
    per_tick = 100
    spent = 0.0
    for i in range(0, len(windows), per_tick):
        feed.take(windows[: i + per_tick])
        spent += timed(feed.flush)
    return median_of(loop), spent / max(1, len(windows))


def codecarbon_figures(folder: Path, repeats: int, n: int) -> dict[str, float] | None:
    try:
        from codecarbon import OfflineEmissionsTracker
    except ImportError:
        return None
    logging.getLogger("codecarbon").setLevel(logging.ERROR)

    def tracker() -> Any:
        return OfflineEmissionsTracker(country_iso_code="DEU", output_dir=str(folder),
                                       save_to_file=False, log_level="error")  # fmt: skip

    starts, stops, tasks = [], [], []
    for _ in range(repeats):
        t = tracker()
        starts.append(timed(t.start))
        stops.append(timed(t.stop))
    t = tracker()
    t.start()
    for i in range(n):
        t0 = time.perf_counter()
        t.start_task(f"step{i}")
        t.stop_task()
        tasks.append(time.perf_counter() - t0)
    t.stop()
    return {"start": median_of(starts), "stop": median_of(stops), "task": median_of(tasks)}


def verdict(value: float, target: float) -> str:
    return "ok" if value <= target else "MISSED"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="start/stop pairs (CodeCarbon: "
                        "each takes over a second)")  # fmt: skip
    parser.add_argument("--windows", type=int, default=2000, help="windows timed")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="greenml-bench-") as tmp:
        folder = Path(tmp)
        os.environ.setdefault("GREENML_SPOOL_DIR", str(folder / "spool"))
        g = greenml_start_stop(folder, args.repeats)
        warm = g["settled"]
        window = greenml_window(folder, args.windows)
        mlflow = mlflow_per_window(folder, args.windows)
        peer = codecarbon_figures(folder, min(args.repeats, 3), min(args.windows, 200))
    print("greenml.Run vs CodeCarbon 3.3.2 OfflineEmissionsTracker (medians)")
    print(f"  Run start+stop(wait=False)      {warm * 1e3:8.2f} ms   target ≤ "
          f"{TARGET_START_STOP_S * 1e3:.0f} ms: {verdict(warm, TARGET_START_STOP_S)}"
          " (1 s apart; stored by a background thread)")
    print(f"  the same, stop right after start{g['handed'] * 1e3:8.2f} ms   (the store still "
          "opening in the background)")
    print(f"  Run start alone                 {g['start'] * 1e3:8.2f} ms")
    stored = g["stored"] * 1e3
    print(f"  Run start+stop, stored on stop  {stored:8.2f} ms   (store, ledger, read back)")
    print(f"  Run start+stop (cold: first)    {g['cold'] * 1e3:8.2f} ms   (opens the store)")
    print(f"  window inside a Run             {window * 1e6:8.2f} µs   target ≤ "
          f"{TARGET_WINDOW_S * 1e6:.0f} µs: {verdict(window, TARGET_WINDOW_S)}")
    if mlflow is not None:
        loop, sink = mlflow
        print(f"  window with the MLflow sink on  {loop * 1e6:8.2f} µs   (in the loop)")
        print(f"  MLflow logging per window       {sink * 1e3:8.3f} ms   target ≤ "
              f"{TARGET_MLFLOW_PER_WINDOW_S * 1e3:.0f} ms: "
              f"{verdict(sink, TARGET_MLFLOW_PER_WINDOW_S)} (batched, the run's thread)")
    else:
        print("  MLflow sink: mlflow not installed (pip install 'greenml[mlflow]')")
    if peer is None:
        print("  CodeCarbon: not installed (pip install 'greenml[bench]')")
        return
    print(f"  CodeCarbon start()              {peer['start'] * 1e3:8.2f} ms")
    print(f"  CodeCarbon stop()               {peer['stop'] * 1e3:8.2f} ms")
    print(f"  CodeCarbon start_task+stop_task {peer['task'] * 1e6:8.2f} µs")
    both = peer["start"] + peer["stop"]
    print(f"  ratio start+stop  CodeCarbon / greenml: {both / warm:8.2f}× "
          f"(stored on stop: {both / g['stored']:.2f}×)")
    print(f"  ratio window      CodeCarbon / greenml: {peer['task'] / window:8.1f}×")


if __name__ == "__main__":
    main()

"""Time loading a year of hourly carbon intensity (8,760 rows) with greenml.

Target: ``greenml.accounting.traces.load_trace`` ≤ 50 ms (median of runs).
When pandas is importable, ``pandas.read_csv`` of the same file (with the
time column parsed) runs in the same process as a peer, and the ratio
greenml / pandas is printed. Both are warmed up once (imports, page cache).
The exit code is 0 even when the target is missed: this is a report.

Usage::

    python benchmarks/intensity_load.py [FILE.csv] [--runs N]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
from collections.abc import Callable
from pathlib import Path

TARGET_MS = 50.0
DEFAULT_FILE = (
    Path(__file__).resolve().parents[1].parent
    / "shared"
    / "data"
    / "carbon_intensity"
    / "DE-LU_2023_hourly.csv"
)


def median_ms(fn: Callable[[], object], runs: int) -> float:
    """Median wall time of ``fn`` in milliseconds, after one warm-up call."""
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--runs", type=int, default=31)
    args = parser.parse_args()

    from greenml.accounting.traces import load_trace

    rows = len(load_trace(args.file).series.values)
    ours = median_ms(lambda: load_trace(args.file), args.runs)
    verdict = "PASS" if ours <= TARGET_MS else "FAIL"
    print(f"file: {args.file.name} ({rows} rows), median of {args.runs} runs")
    print(f"greenml load_trace: {ours:7.2f} ms   target ≤ {TARGET_MS:.0f} ms   {verdict}")
    if importlib.util.find_spec("pandas") is None:
        print("pandas not importable: no peer measured")
        return
    import pandas as pd

    def read() -> object:
        return pd.read_csv(args.file, parse_dates=[0])

    peer = median_ms(read, args.runs)
    print(f"pandas.read_csv:    {peer:7.2f} ms   ratio greenml/pandas = {ours / peer:.2f}")


if __name__ == "__main__":
    main()

"""Speed of time-weighted carbon accounting, next to the naive mean-intensity × energy.

Target: the time-weighted carbon of a run with 100,000 power samples (1 Hz,
about 28 hours) against an hourly intensity series of a whole year takes
≤ 20 ms (median of repeats). The naive figure (the run's mean intensity × its
energy) is timed and printed for reference, with how far it is from the
time-weighted one on this run.

The intensity is the Electricity Maps 2023 hourly series of DE-LU from
``shared/data`` when it is on this machine, else a synthetic year with a daily
cycle. The exit code is 0 even when the target fails: this is a report.

Usage::

    python benchmarks/accounting_speed.py [--samples N] [--repeats N]
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from greenml.accounting.carbon import carbon_of, naive_carbon_kg
from greenml.accounting.intensity import GridIntensity, IntensityProvenance
from greenml.accounting.profile import total_power
from greenml.accounting.pue import pue_for
from greenml.accounting.series import StepSeries

TARGET_S = 0.020
SHARED = Path("/work/shared/data/carbon_intensity/DE-LU_2023_hourly.csv")
YEAR_START = datetime(2023, 1, 1, tzinfo=timezone.utc).timestamp()


def hourly_year() -> tuple[GridIntensity, str]:
    """A year of hourly intensity: the shared DE-LU file, or a synthetic one."""
    if SHARED.exists():
        times, values = [], []
        with SHARED.open(encoding="utf-8") as handle:
            reader = csv.reader(handle)
            header = next(reader)
            col = next(i for i, name in enumerate(header) if "LCA" in name)
            for row in reader:
                moment = datetime.fromisoformat(row[0]).replace(tzinfo=timezone.utc)
                times.append(moment.timestamp())
                values.append(float(row[col]))
        label = f"{SHARED.name} ({len(times)} hours)"
    else:
        times = [YEAR_START + h * 3600.0 for h in range(8760)]
        values = [350 + 150 * math.sin(2 * math.pi * h / 24) for h in range(8760)]
        label = "synthetic year, daily cycle (8760 hours)"
    series = StepSeries.from_points(times, values, "g/kWh", last_step_s=3600.0)
    prov = IntensityProvenance("benchmark", "DE-LU", "hourly", "average", "lifecycle", 2023)
    return GridIntensity(series, prov), label


def median_s(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up (imports, caches)
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args(argv)

    grid, label = hourly_year()
    rng = np.random.default_rng(0)
    start = YEAR_START + 60 * 86400.0 + 7 * 3600.0  # 2 March, 07:00 UTC
    times = start + np.arange(args.samples, dtype=np.float64)  # 1 Hz
    # a training run: busy by day, idle at night, with noise
    hour_of_day = ((times - YEAR_START) / 3600.0) % 24
    busy = (hour_of_day > 8) & (hour_of_day < 20)
    power = np.where(busy, 2400.0, 400.0) + rng.normal(0.0, 40.0, args.samples)
    integrated_j = float(np.sum(0.5 * (power[1:] + power[:-1]) * np.diff(times)))
    measured_j = integrated_j * 0.98  # the counters disagree a little with sampled power
    end = float(times[-1])
    pue = pue_for(provider="gcp")

    weighted = median_s(lambda: carbon_of(times, power, measured_j, grid, pue), args.repeats)
    naive = median_s(lambda: naive_carbon_kg(measured_j, grid, pue, start, end), args.repeats)
    carbon = carbon_of(times, power, measured_j, grid, pue)
    naive_kg = naive_carbon_kg(measured_j, grid, pue, start, end)
    lists = (times.tolist(), power.tolist())
    from_lists = median_s(
        lambda: carbon_of(*total_power([lists]), measured_j, grid, pue), args.repeats
    )

    hours = (end - start) / 3600.0
    print(f"intensity: {label}")
    print(f"run: {args.samples:,} power samples at 1 Hz ({hours:.1f} h), "
          f"{measured_j / 3.6e6:.1f} kWh IT, PUE {pue.value}")  # fmt: skip
    print(f"  time-weighted carbon : {carbon.kg:10.3f} kg  median {weighted * 1e3:7.2f} ms")
    print(f"  naive mean × energy  : {naive_kg:10.3f} kg  median {naive * 1e3:7.2f} ms "
          f"(differs by {100 * (naive_kg / carbon.kg - 1):+.1f} %)")  # fmt: skip
    print(f"  from Python lists (the Meter's timeline, summed): median {from_lists * 1e3:.2f} ms")
    verdict = "PASS" if weighted <= TARGET_S else "FAIL"
    print(f"{verdict}: time-weighted carbon {weighted * 1e3:.2f} ms ≤ {TARGET_S * 1e3:.0f} ms "
          f"(ratio to naive: {weighted / naive:.0f}×)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

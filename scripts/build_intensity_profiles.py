"""Regenerate the packaged typical daily profiles of grid zones from ../shared/data.

Writes ``src/greenml/data/intensity_profiles.csv`` (see its SOURCES.md): per
Electricity Maps zone, the mean life-cycle intensity of 2023 by hour of day
(UTC) and by day type (weekday Monday–Friday or weekend, UTC calendar). The
planner scales it to a short history when it has too little to fit its
seasonal forecaster (:mod:`greenml.schedule.profile`).

Usage::

    python scripts/build_intensity_profiles.py [--data ../shared/data] [--out src/greenml/data]
"""

from __future__ import annotations

import argparse
import csv
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data"
DEFAULT_OUT = REPO / "src" / "greenml" / "data"
YEAR = 2023
COLUMN = "Carbon Intensity gCO₂eq/kWh (LCA)"


def profile_rows(path: Path) -> list[list[object]]:
    """(zone, day type, hour, mean g/kWh, hours) rows of one hourly file."""
    sums: dict[tuple[str, int], list[float]] = {}
    zone = ""
    with path.open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            zone = row["Zone Id"]
            when = datetime.strptime(row["Datetime (UTC)"], "%Y-%m-%d %H:%M:%S")
            kind = "weekend" if when.weekday() >= 5 else "weekday"
            cell = sums.setdefault((kind, when.hour), [0.0, 0.0])
            cell[0] += float(row[COLUMN])
            cell[1] += 1
    return [
        [zone, kind, hour, f"{total / count:.2f}", int(count)]
        for (kind, hour), (total, count) in sorted(sums.items())
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    rows: list[list[object]] = []
    for path in sorted((args.data / "carbon_intensity").glob(f"*_{YEAR}_hourly.csv")):
        rows += profile_rows(path)
    out = args.out / "intensity_profiles.csv"
    with out.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["zone", "day_type", "hour_utc", "lifecycle_g_per_kwh", "hours"])
        writer.writerows(rows)
    print(f"wrote {out} ({len(rows)} rows)")


if __name__ == "__main__":
    main()

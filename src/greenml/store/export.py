"""Run records as JSON and samples as CSV, for people and other tools."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from greenml.store.record import iso_utc

CSV_COLUMNS = (
    "time_utc",
    "device",
    "component",
    "power_w",
    "utilization",
    "sm_activity",
    "memory_used_bytes",
    "sm_clock_mhz",
)


def record_to_json(record: Mapping[str, Any]) -> str:
    """A run record as indented JSON (keys in record order, non-ASCII kept)."""
    return json.dumps(record, indent=2, sort_keys=False, ensure_ascii=False)


def samples_to_csv(samples: Iterable[Mapping[str, Any]], file: TextIO) -> None:
    """Write samples (as returned by ``Store.samples``) as CSV with a header row.

    Times are ISO 8601 UTC; missing values are empty cells.
    """
    writer = csv.writer(file, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for s in samples:
        writer.writerow(
            [iso_utc(float(s["time_s"]))]
            + ["" if s.get(col) is None else s[col] for col in CSV_COLUMNS[1:]]
        )

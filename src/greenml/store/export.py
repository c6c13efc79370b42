"""Run records as JSON and samples as CSV, for people and other tools."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from greenml.store.csv_cells import csv_cell
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


def json_text(data: Any, **options: Any) -> str:
    """JSON as greenml writes it: always valid JSON, so NaN and infinities (which
    ``json.dumps`` would write as the non-JSON ``NaN``/``Infinity``) become ``null``.

    ``options`` are ``json.dumps``'s (``indent``, ``ensure_ascii``, ``default`` ...).
    """
    return json.dumps(finite(data), allow_nan=False, **options)


def finite(data: Any) -> Any:
    """``data`` with every non-finite float replaced by ``None`` (lists, tuples, dicts walked)."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite(v) for v in data]
    return data


def record_to_json(record: Mapping[str, Any]) -> str:
    """A run record as indented JSON (keys in record order, non-ASCII kept), valid JSON."""
    return json_text(dict(record), indent=2, sort_keys=False, ensure_ascii=False)


def samples_to_csv(samples: Iterable[Mapping[str, Any]], file: TextIO) -> None:
    """Write samples (as returned by ``Store.samples``) as CSV with a header row.

    Times are ISO 8601 UTC; missing values are empty cells.
    """
    writer = csv.writer(file, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for s in samples:
        writer.writerow(
            [iso_utc(float(s["time_s"]))] + [csv_cell(s.get(col)) for col in CSV_COLUMNS[1:]]
        )

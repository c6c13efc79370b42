"""Conversions between greenml objects and table rows (no SQLAlchemy needed)."""

from __future__ import annotations

import json
from typing import Any

from greenml.measure.measurement import Measurement, Sample
from greenml.store.record import Row, loads, window_summary

METRIC_COLUMNS = ("utilization", "sm_activity", "memory_used_bytes", "sm_clock_mhz")
"""Sample metrics with their own column; any other metric goes to ``samples.extra``."""


def dumps(value: Any) -> str:
    """JSON text for a column (non-ASCII kept as is)."""
    return json.dumps(value, ensure_ascii=False)


def sample_row(run_id: str, s: Sample) -> dict[str, Any]:
    """A ``samples`` row: known metrics in their columns, the others as JSON ``extra``."""
    other = {k: v for k, v in s.metrics.items() if k not in METRIC_COLUMNS}
    row: dict[str, Any] = {
        "run_id": run_id,
        "device": s.device,
        "component": s.component,
        "t": float(s.time_s),
        "power_w": _value(s.power_w),
        "extra": dumps(other) if other else None,
    }
    for col in METRIC_COLUMNS:
        row[col] = _value(s.metrics.get(col))
    return row


def _value(value: float | None) -> float | None:
    """A reading as stored: NaN is no reading (SQLite stores it as NULL; PostgreSQL alike)."""
    if value is None:
        return None
    number = float(value)
    return None if number != number else number


def sample_dict(r: Row) -> dict[str, Any]:
    """A stored sample as ``Store.samples`` returns it."""
    item: dict[str, Any] = {
        "time_s": r["t"],
        "device": r["device"],
        "component": r["component"],
        "power_w": r["power_w"],
    }
    for col in METRIC_COLUMNS:
        item[col] = r[col]
    item["extra"] = loads(r["extra"], {}, f"sample extra of run {r['run_id']}")
    return item


def window_row(run_id: str, m: Measurement) -> dict[str, Any]:
    """A ``windows`` row: ``Measurement.to_window_dict()`` in columns, the energy block as JSON."""
    window = m.to_window_dict()
    return {
        "run_id": run_id,
        "name": window["name"],
        "started_at": window["started_at"],
        "duration_s": float(window["duration_s"]),
        "energy_j": float(m.total_j),
        "measurement": dumps(window["energy"]),
    }


def window_dict(r: Row) -> dict[str, Any]:
    """A stored window as ``Store.windows`` returns it (with its ``measurement``)."""
    measurement = loads(r["measurement"], {}, f"window of run {r['run_id']}")
    return {**window_summary(r), "measurement": measurement}


def tag_rows(run_id: str, tags: dict[str, str]) -> list[dict[str, Any]]:
    """``run_tags`` rows of a run's tags (the index behind filtering by tag)."""
    return [{"run_id": run_id, "key": str(k), "value": str(v)} for k, v in tags.items()]

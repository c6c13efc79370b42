"""Run records as a table: one row per run, the same columns for pandas, CSV and Parquet.

Columns: ``id``, ``name``, ``tags`` (``k=v;k=v``), ``status``, ``started_at``,
``duration_s``, ``energy_<component>_kwh`` (one column per component seen: gpu,
cpu, dram …), ``energy_kwh``, ``co2_kg``, ``cost_usd``, ``methods``
(``component:method;…``), ``uncertainty_rel`` (of the energy), ``co2_uncertainty_rel``,
``location`` (where the carbon intensity came from), ``pue``. Unknown figures
are empty (``None``), never zero.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

from greenml.store.csv_cells import csv_cell

HEAD = ("id", "name", "tags", "status", "started_at", "duration_s")
TAIL = ("energy_kwh", "co2_kg", "cost_usd", "methods", "uncertainty_rel",
        "co2_uncertainty_rel", "location", "pue")  # fmt: skip


FLOATS = ("duration_s", "energy_kwh", "co2_kg", "cost_usd", "uncertainty_rel",
          "co2_uncertainty_rel", "pue")  # fmt: skip


def float_columns(names: Sequence[str]) -> list[str]:
    """The columns holding numbers (an unknown one is NaN in a DataFrame, never ``None``)."""
    return [n for n in names if n in FLOATS or (n.startswith("energy_") and n.endswith("_kwh"))]


def run_row(record: Mapping[str, Any]) -> dict[str, Any]:
    """One run record as a flat row (see the module's columns)."""
    energy = record.get("energy") or {}
    carbon = record.get("carbon") or {}
    cost = record.get("cost") or {}
    components = energy.get("components") or {}
    row: dict[str, Any] = {
        "id": record.get("id"),
        "name": record.get("name"),
        "tags": ";".join(f"{k}={v}" for k, v in (record.get("tags") or {}).items()),
        "status": record.get("status"),
        "started_at": record.get("started_at"),
        "duration_s": record.get("duration_s"),
    }
    for comp, block in components.items():
        joules = (block or {}).get("energy_j")
        row[f"energy_{comp}_kwh"] = None if joules is None else float(joules) / 3.6e6
    row.update(
        energy_kwh=energy.get("total_kwh"),
        co2_kg=carbon.get("kg"),
        cost_usd=cost.get("usd"),
        methods=";".join(f"{c}:{(b or {}).get('method', '?')}" for c, b in components.items()),
        uncertainty_rel=energy.get("uncertainty_rel"),
        co2_uncertainty_rel=carbon.get("uncertainty_rel"),
        location=carbon.get("location") or carbon.get("source"),
        pue=carbon.get("pue"),
    )
    return row


def columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The columns of ``rows``: the head, each component's energy (in order seen), the tail."""
    parts: dict[str, None] = {}
    for row in rows:
        for key in row:
            if key.startswith("energy_") and key != "energy_kwh":
                parts[key] = None
    return [*HEAD, *parts, *TAIL]


def rows_to_csv(rows: Iterable[Mapping[str, Any]], file: TextIO) -> None:
    """Write rows as CSV with a header; missing values are empty cells."""
    rows = list(rows)
    names = columns(rows)
    writer = csv.writer(file, lineterminator="\n")
    writer.writerow(names)
    for row in rows:
        writer.writerow([csv_cell(row.get(c)) for c in names])

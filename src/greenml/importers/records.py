"""Imported runs as run records, and their storing (one transaction per run, idempotent).

The figures keep the tool's provenance: the ``imported`` block names the tool, its
version and its own method label; every component is ``estimated`` (greenml did not
measure it and cannot check how the tool did), with :data:`IMPORTED_UNCERTAINTY_REL`
as the stated uncertainty unless the tool gives one.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError
from greenml.quantities import J_PER_KWH
from greenml.record.run_record import RECORD_SCHEMA_VERSION

if TYPE_CHECKING:
    from greenml.store.repository import Store

IMPORTED_UNCERTAINTY_REL = 0.3
"""greenml's stated uncertainty of an imported figure whose method it cannot check."""
MAX_DURATION_S = 10 * 365.25 * 86400


@dataclass(frozen=True)
class ImportedRun:
    """One run read from another tool, in greenml's units (J, s, g CO2eq)."""

    tool: str
    tool_version: str | None
    method: str  # the tool's own label of how it obtained the figures
    source_file: str
    source_run_id: str
    ended_at: datetime  # timezone-aware
    duration_s: float
    components_j: dict[str, float]  # "cpu", "gpu", "dram"
    total_j: float  # IT energy (the tool's PUE taken out)
    co2_g: float | None
    intensity_g_per_kwh: float | None
    intensity_source: str
    location: str | None
    pue: float | None = None
    name: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    environment: dict[str, Any] = field(default_factory=dict)


def run_id(tool: str, source_run_id: str) -> str:
    """A stable 32-character id (the same import twice is the same run)."""
    return hashlib.sha256(f"{tool}:{source_run_id}".encode()).hexdigest()[:32]


def check_figure(value: float, what: str, *, upper: float = 1e18) -> float:
    """``value`` when finite and within ``[0, upper]``.

    Raises:
        ConfigError: Otherwise (one line naming ``what``).
    """
    if not math.isfinite(value) or not 0 <= value <= upper:
        raise ConfigError(f"{what} must be a number between 0 and {upper:g}, not {value!r}")
    return value


def to_record(run: ImportedRun) -> dict[str, Any]:
    """The run record (JSON object) of an imported run."""
    started = run.ended_at - timedelta(seconds=run.duration_s)
    rel = IMPORTED_UNCERTAINTY_REL
    label = f"{run.tool} {run.tool_version or ''}".strip()
    components = {
        name: {"energy_j": j, "method": "estimated", "uncertainty_rel": rel,
               "devices": {name: {"energy_j": j, "method": "estimated", "uncertainty_rel": rel,
                                  "name": name, "note": f"as {label} reported it"}}}
        for name, j in run.components_j.items()
    }  # fmt: skip
    record: dict[str, Any] = {
        "schema_version": RECORD_SCHEMA_VERSION,
        "id": run_id(run.tool, run.source_run_id),
        "name": run.name,
        "command": [],
        "tags": {"imported": run.tool, **run.tags},
        "started_at": _iso(started),
        "ended_at": _iso(run.ended_at),
        "duration_s": run.duration_s,
        "exit_code": None,
        "status": "completed",
        "energy": {
            "total_j": run.total_j, "total_kwh": run.total_j / J_PER_KWH,
            "uncertainty_rel": rel, "components": components,
            "notes": [f"imported from {label} ({run.method}); greenml did not measure it: "
                      f"every component is labelled estimated, ±{rel:.0%} stated by greenml",
                      *run.notes],
        },
        "environment": run.environment,
        "windows": [],
        "imported": {
            "tool": run.tool, "tool_version": run.tool_version, "method": run.method,
            "source_file": run.source_file, "source_run_id": run.source_run_id,
            "imported_at": _iso(datetime.now(timezone.utc)),
        },
    }  # fmt: skip
    if run.co2_g is not None:
        record["carbon"] = {
            "status": "ok", "kg": run.co2_g / 1000.0, "uncertainty_rel": rel,
            "intensity_g_per_kwh": run.intensity_g_per_kwh, "source": run.intensity_source,
            "kind": "average", "scope": "operational", "location": run.location,
            "pue": run.pue, "pue_source": f"as {label} applied it" if run.pue else None,
            "it_energy_kwh": run.total_j / J_PER_KWH,
            "facility_energy_kwh": run.total_j * (run.pue or 1.0) / J_PER_KWH,
            "method": f"{label}'s own figure",
        }  # fmt: skip
    return record


def store_imported(store: Store, runs: list[ImportedRun]) -> tuple[list[str], list[str]]:
    """Store the runs; (ids newly stored, ids that were already there).

    Raises:
        ConfigError, RecordValueError: A run the store cannot hold (nothing of it stored).
    """
    from greenml.store.transfer import FORMAT, import_run

    new: list[str] = []
    old: list[str] = []
    for run in runs:
        record = to_record(run)
        document = {"format": FORMAT, "record": record, "windows": [], "samples": []}
        (new if import_run(store, document, None, upload=False) else old).append(record["id"])
    return new, old


def _iso(when: datetime) -> str:
    return when.astimezone(timezone.utc).isoformat()

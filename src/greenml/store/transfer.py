"""A finished run as one JSON document, to send to a team server and store there.

:func:`export_run` reads a stored run (record, windows, samples as columns per
device) into the upload document; :func:`import_run` writes such a document
into another store **in one transaction**: the run with its tags, windows,
samples (packed per device, as sample blocks) and upload row, or nothing. Importing a run id that is
already there changes nothing (uploads are idempotent).

Document (``format`` 1)::

    {"format": 1, "record": {...the run record...},
     "windows": [{"name", "started_at" (ISO), "duration_s", "energy_j", "measurement"}],
     "samples": [{"device", "component", "t": [...], "power_w": [...], <metric>: [...]}],
     "ledger_entry": {...the sender's ledger entry...} | null, "user": "alice" | null}

Sample columns are JSON numbers, ``null`` for a missing value. Every value is
checked against what the store holds (:mod:`greenml.store.values`) before
anything is written: lengths of the schema's columns, no NUL, finite numbers,
no negative energy, times in sane years.

Lazy imports: numpy, only when samples are read or written.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, select

from greenml.errors import ConfigError, RecordValueError, RunConflict
from greenml.measure.measurement import Sample
from greenml.store.record import CORE_KEYS
from greenml.store.rows import dumps, sample_row, tag_rows
from greenml.store.schema import (
    BLOCK_COLUMNS,
    FINAL_STATUSES,
    run_tags,
    run_uploads,
    runs,
    sample_blocks,
    windows,
)
from greenml.store.values import (
    MAX_ABS,
    YEARS,
    check_devices,
    check_energy,
    check_numbers,
    check_run_texts,
    check_text,
    check_time,
    check_window_names,
)

if TYPE_CHECKING:
    from greenml.store.repository import Store

FORMAT = 1
_TIME_SPAN_S = 200 * 365.25 * 86400  # a window lasts at most the span of YEARS
SAMPLE_COLUMNS = BLOCK_COLUMNS  # t, power_w, then the metric columns


def export_run(
    store: Store, run_id: str, *, ledger_entry: dict[str, Any] | None = None,
    user: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The upload document of a stored run.

    Raises:
        RunNotFound: No such run.
    """
    record = store.get_record(run_id)
    return upload_document(record, store.windows(record["id"]),
                           stored_series(store, record["id"]), ledger_entry, user)  # fmt: skip


def upload_document(
    record: dict[str, Any], windows: list[dict[str, Any]], series: list[dict[str, Any]],
    ledger_entry: dict[str, Any] | None = None, user: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The upload document of a run in hand: its record, windows and sample series."""
    return {"format": FORMAT, "record": record, "windows": windows, "samples": series,
            "ledger_entry": ledger_entry, "user": user}  # fmt: skip


def series_of(samples: Sequence[Sample]) -> list[dict[str, Any]]:
    """Samples in memory as the upload's columns per device, each ordered by time (as
    :func:`stored_series` reads them), ``null`` for a missing value."""
    by_device: dict[str, list[Sample]] = {}
    for s in sorted(samples, key=lambda s: s.time_s):  # stable: ties stay as stored
        by_device.setdefault(s.device, []).append(s)
    series = []
    for device, items in by_device.items():
        rows = [sample_row("", s) for s in items]
        entry: dict[str, Any] = {"device": device, "component": items[0].component}
        for name in SAMPLE_COLUMNS:
            entry[name] = [r[name] for r in rows]
        series.append(entry)
    return series


def stored_series(store: Store, run_id: str) -> list[dict[str, Any]]:
    """A stored run's samples as the upload's columns per device (one read)."""
    cols = store.sample_columns(run_id)
    series = []
    for code, device in enumerate(cols["devices"]):
        mask = cols["device"] == code
        component = cols["components"][int(cols["component"][mask][0])] if mask.any() else ""
        entry: dict[str, Any] = {"device": device, "component": component}
        for name in SAMPLE_COLUMNS:
            values = cols["time_s" if name == "t" else name][mask]
            entry[name] = [None if math.isnan(v) else v for v in values.tolist()]
        series.append(entry)
    return series


def import_run(store: Store, document: dict[str, Any], project_id: int | None,
               *, upload: bool = True) -> bool:  # fmt: skip
    """Store an upload document in one transaction; False when the run was already there.

    ``upload=False`` stores the run without an upload row (a run read from another
    tool's files by ``greenml import``, not sent by a client).

    Raises:
        ConfigError: The document is not a finished run in format 1 (one line says why).
        RecordValueError: A value the store cannot hold (too long, NUL, not finite, a
            negative energy, an absurd year).
        RecordTypeError: The record has a value of the wrong type.
        RunConflict: The run id belongs to another project.
        StoreError: The database failed.
    """
    record, run_row = _run_row(document, project_id)
    window_rows = [_window_row(record["id"], w) for w in _list(document, "windows")]
    check_window_names(w["name"] for w in window_rows)
    sample_series = [_series(s) for s in _list(document, "samples")]
    check_devices((device, component) for device, component, _ in sample_series)
    user = _text(document.get("user"), "user")
    if user is not None:
        check_text(user, "user", "run_uploads", "user")
    entry = document.get("ledger_entry")
    if entry is not None and not isinstance(entry, dict):
        raise ConfigError("ledger_entry must be an object or null")
    check_numbers({k: v for k, v in document.items() if k != "samples"})
    run_id = record["id"]
    with store.writing("upload a run to") as conn:
        found = conn.execute(
            select(runs.c.project_id).where(runs.c.id == run_id).with_for_update()
        ).first()
        if found is not None:
            if found[0] != project_id:
                raise RunConflict(f"run {run_id} was uploaded to another project")
            return False
        conn.execute(runs.insert().values(**run_row))
        if record.get("tags"):
            conn.execute(run_tags.insert(), tag_rows(run_id, record["tags"]))
        if window_rows:
            conn.execute(windows.insert(), window_rows)
        _insert_samples(conn, run_id, sample_series)
        if not upload:
            return True
        conn.execute(run_uploads.insert().values(
            run_id=run_id, project_id=project_id, user=user,
            uploaded_at=time.time(), started_at=run_row["started_at"],
            ledger_entry=None if entry is None else dumps(entry), **totals(record),
        ))  # fmt: skip
    return True


def totals(record: dict[str, Any]) -> dict[str, Any]:
    """A record's energy, carbon and cost with absolute uncertainties (``run_uploads`` columns).

    ``measured_j`` is the part of the energy its components measured (hardware
    counters or sampled power), the rest a model estimated.
    """
    energy = record.get("energy") or {}
    energy_j = _number(energy.get("total_j"))
    rel = _number(energy.get("uncertainty_rel")) or 0.0
    components = [c for c in (energy.get("components") or {}).values() if isinstance(c, dict)]
    measured_j = sum(_number(c.get("energy_j")) or 0.0 for c in components
                     if c.get("method") != "estimated")  # fmt: skip
    out: dict[str, Any] = {
        "energy_j": energy_j,
        "energy_uncertainty_j": None if energy_j is None else energy_j * rel,
        "measured_j": None if energy_j is None else measured_j,
    }
    for key, block_key, value_key, scale in (
        ("co2", "carbon", "kg", 1000.0), ("cost", "cost", "usd", 1.0)
    ):  # fmt: skip
        block = record.get(block_key) or {}
        value = _number(block.get(value_key))
        unit = "g" if key == "co2" else "usd"
        out[f"{key}_{unit}"] = None if value is None else value * scale
        block_rel = _number(block.get("uncertainty_rel")) or 0.0
        out[f"{key}_uncertainty_{unit}"] = None if value is None else value * scale * block_rel
    return out


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _run_row(document: dict[str, Any], project_id: int | None) -> tuple[dict[str, Any], Any]:
    if not isinstance(document, dict):
        raise ConfigError("the upload must be a JSON object")
    if document.get("format") != FORMAT:
        raise ConfigError(f"upload format must be {FORMAT}, not {document.get('format')!r}")
    record = document.get("record")
    if not isinstance(record, dict):
        raise ConfigError("the upload has no record object")
    from greenml.record.run_record import RunRecord

    RunRecord.from_dict(record, strict=True)  # the run-record schema: RecordTypeError
    status = record.get("status")
    if status not in FINAL_STATUSES:
        raise ConfigError(f"only finished runs can be uploaded (status {status!r})")
    run_id = record.get("id")
    if not isinstance(run_id, str) or not 1 <= len(run_id) <= 32 or not run_id.isalnum():
        raise ConfigError(f"run id must be 1-32 letters and digits, not {run_id!r}")
    tags = record.get("tags") or {}
    if not isinstance(tags, dict):
        raise ConfigError("record.tags must be an object")
    check_run_texts(_text(record.get("name"), "name"), tags, None)
    check_energy(record.get("energy"), "record.energy")
    duration = record.get("duration_s")
    if isinstance(duration, int | float) and not isinstance(duration, bool) and duration < 0:
        raise RecordValueError(f"record.duration_s is negative: {duration!r}")
    extra = {k: v for k, v in record.items() if k not in CORE_KEYS or k == "schema_version"}
    row = {
        "id": run_id, "name": _text(record.get("name"), "name"),
        "command": dumps(record.get("command") or []), "tags": dumps(record.get("tags") or {}),
        "status": status, "started_at": _when(record.get("started_at"), "started_at"),
        "ended_at": _when(record.get("ended_at"), "ended_at", optional=True),
        "heartbeat_at": time.time(), "duration_s": record.get("duration_s"),
        "exit_code": record.get("exit_code"), "pid": 0, "hostname": None,
        "energy": dumps(record.get("energy")),
        "environment": dumps(record.get("environment") or {}),
        "extra": dumps(extra), "project_id": project_id,
    }  # fmt: skip
    return record, row


def _window_row(run_id: str, w: Any) -> dict[str, Any]:
    if not isinstance(w, dict) or not isinstance(w.get("measurement"), dict):
        raise ConfigError("each window must be an object with a measurement")
    try:
        row: dict[str, Any] = {
            "run_id": run_id, "name": str(w["name"]),
            "started_at": _when(w["started_at"], "window started_at"),
            "duration_s": float(w["duration_s"]), "energy_j": float(w["energy_j"]),
            "measurement": dumps(w["measurement"]),
        }  # fmt: skip
    except RecordValueError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"a window is missing or mistypes {exc}") from None
    what = f"window {str(w['name'])[:40]!r}"
    check_energy({"energy_j": row["energy_j"]}, what)
    check_energy(w["measurement"], what)
    if not 0 <= float(w["duration_s"]) <= _TIME_SPAN_S:
        raise RecordValueError(f"{what} lasts {w['duration_s']!r} s")
    return row


def _series(s: Any) -> tuple[str, str, Any]:
    """(device, component, float64 table count × columns) of one device's samples."""
    import numpy as np

    if not isinstance(s, dict) or not isinstance(s.get("t"), list):
        raise ConfigError("each sample series must be an object with a list t")
    device, component = _text(s.get("device"), "device"), _text(s.get("component"), "component")
    if not device or not component:
        raise ConfigError("each sample series needs a device and a component")
    n = len(s["t"])
    columns = []
    for name in SAMPLE_COLUMNS:
        values = s.get(name)
        if values is None:
            values = [None] * n
        if not isinstance(values, list) or len(values) != n:
            raise ConfigError(f"sample column {name} of {device} must be a list of {n} numbers")
        try:
            columns.append(np.array(values, dtype=np.float64))  # None -> nan
        except (TypeError, ValueError):
            raise ConfigError(f"sample column {name} of {device} holds a non-number") from None
    table = np.column_stack(columns) if n else np.empty((0, len(SAMPLE_COLUMNS)))
    if n and np.isnan(table[:, 0]).any():
        raise ConfigError(f"sample times of {device} must all be numbers")
    known = table[~np.isnan(table)]
    if known.size and (np.isinf(known).any() or np.abs(known).max() > MAX_ABS):
        raise RecordValueError(f"samples of {device} hold a number that is not finite or sane")
    if n:
        check_time(float(table[:, 0].min()), f"a sample time of {device}")
        check_time(float(table[:, 0].max()), f"a sample time of {device}")
    return device, component, table


def _insert_samples(conn: Connection, run_id: str, series: list[tuple[str, str, Any]]) -> None:
    """One ``sample_blocks`` row per device: an upload's samples are kept packed only.

    Analyses read blocks (:meth:`Store.sample_columns`), and :meth:`Store.samples`
    unpacks them when a run has no sample rows, so an hour at 10 Hz on 8 GPUs
    is 8 inserts rather than 288,000 rows.
    """
    blocks = [
        {"run_id": run_id, "device": device, "component": component, "count": len(table),
         "data": table.astype("<f8").tobytes()}  # little-endian, as blocks.py packs them
        for device, component, table in series if len(table)
    ]  # fmt: skip
    if blocks:
        conn.execute(sample_blocks.insert(), blocks)


def _list(document: dict[str, Any], key: str) -> list[Any]:
    value = document.get(key) or []
    if not isinstance(value, list):
        raise ConfigError(f"{key} must be a list")
    return value


def _text(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 255:
        raise ConfigError(f"{what} must be a string of at most 255 characters")
    return value


def _when(value: Any, what: str, optional: bool = False) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return check_time(float(value), what)
    try:
        when = datetime.fromisoformat(str(value))
    except ValueError:
        raise ConfigError(f"{what} must be an ISO 8601 time, not {value!r}") from None
    if not YEARS[0] <= when.year < YEARS[1]:
        raise RecordValueError(f"{what} is not a time between {YEARS[0]} and {YEARS[1]}: {value!r}")
    return check_time(when.timestamp(), what)


"""The run record: the JSON-ready dict a stored run reads back as.

Pure functions over plain mappings (no SQLAlchemy), shared by the repository,
reports and exporters. The record's types are in :mod:`greenml.record.run_record`.

Lazy imports: psutil, only to check whether a heartbeat's process is alive.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from greenml.errors import StoreError
from greenml.measure.measurement import (
    POWER_INTEGRATED,
    ComponentEnergy,
    DeviceEnergy,
    Measurement,
    weakest_method,
)

HEARTBEAT_STALE_S = 30.0
"""A ``running`` run whose heartbeat is older than this reads as ``incomplete``."""

PARTIAL_UNCERTAINTY_REL = 0.10
"""Assumed uncertainty of energy integrated from flushed samples: sensor error
(NVML power is about ±5 %) plus the time after the last flush that is missing."""

PARTIAL_NOTE = (
    "run did not finish: greenml was killed (or crashed); the command may have run on unmeasured "
    "(unless greenml run --kill-on-exit); energy integrated from flushed samples"
)
RUNNING_NOTE = "run still in progress; energy integrated from flushed samples"

CORE_KEYS = frozenset(
    {
        "schema_version", "id", "name", "command", "tags", "started_at", "ended_at",
        "duration_s", "exit_code", "status", "energy", "environment", "windows",
    }
)  # fmt: skip
"""Keys of every record (``schema_version`` since version 2); ``extra`` keys may not
shadow them."""

Row = Mapping[Any, Any]
"""A database row as a mapping (SQLAlchemy ``RowMapping`` or a plain dict)."""


def iso_utc(t: float | None) -> str | None:
    """Unix seconds as ISO 8601 in UTC (``...+00:00``); ``None`` stays ``None``."""
    if t is None:
        return None
    return datetime.fromtimestamp(t, tz=timezone.utc).isoformat()


def loads(text: str | None, default: Any, what: str) -> Any:
    """Decode a stored JSON column, ``default`` when it is null.

    Raises:
        StoreError: The stored text is not JSON.
    """
    if text is None:
        return default
    try:
        return json.loads(text)
    except ValueError as exc:
        raise StoreError(f"stored {what} is not valid JSON: {exc}") from exc


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists on this host (zombies count as dead)."""
    if pid <= 0:
        return False
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is a core dependency
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    try:
        status: str = psutil.Process(pid).status()
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return bool(psutil.pid_exists(pid))
    return bool(status != psutil.STATUS_ZOMBIE)


def effective_status(row: Row, *, now: float, hostname: str) -> str:
    """The status to show: a ``running`` run whose process is gone is ``incomplete``.

    Args:
        row: A ``runs`` row (``status``, ``pid``, ``hostname``, ``heartbeat_at``).
        now: Current Unix time.
        hostname: This machine's host name.
    """
    status = str(row["status"])
    if status != "running":
        return status
    if row["hostname"] == hostname and not pid_alive(int(row["pid"])):
        return "incomplete"
    if now - float(row["heartbeat_at"]) > HEARTBEAT_STALE_S:
        return "incomplete"
    return "running"


def partial_energy(
    samples: Iterable[Row], *, note: str, devices: dict[str, Any] | None = None
) -> dict[str, Any]:
    """An energy block integrated from stored samples (trapezoid per device).

    Args:
        samples: Sample rows with ``device``, ``component``, ``t``, ``power_w``.
        note: Why the energy is partial; stored in the block and on each device.
        devices: How each device was measured (``method``, ``uncertainty_rel``,
            ``name``), as the run stored it at its start. A modelled device stays
            ``estimated``; a measured one becomes ``power-integrated``.
    """
    devices = devices or {}
    series: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for s in samples:
        if s["power_w"] is None:
            continue
        key = (str(s["component"]), str(s["device"]))
        series.setdefault(key, []).append((float(s["t"]), float(s["power_w"])))
    components: dict[str, dict[str, DeviceEnergy]] = {}
    for (component, device), points in sorted(series.items()):
        if len(points) < 2:
            continue
        points.sort()
        energy_j = sum(
            (p0 + p1) / 2.0 * (t1 - t0) for (t0, p0), (t1, p1) in itertools.pairwise(points)
        )
        known = devices.get(device) or {}
        method = weakest_method([POWER_INTEGRATED, str(known.get("method", POWER_INTEGRATED))])
        uncertainty = max(PARTIAL_UNCERTAINTY_REL, float(known.get("uncertainty_rel", 0.0)))
        components.setdefault(component, {})[device] = DeviceEnergy(
            energy_j=energy_j, method=method, uncertainty_rel=uncertainty,
            name=str(known.get("name", "")),
        )  # fmt: skip
    measurement = Measurement(
        name="partial",
        started_at=datetime.now(tz=timezone.utc),
        duration_s=0.0,
        components={c: ComponentEnergy(devices=d) for c, d in components.items()},
    )
    block = measurement.to_dict()
    block["method"] = weakest_method(
        [POWER_INTEGRATED, *(c.method for c in measurement.components.values())]
    )
    block["note"] = note
    return block


def window_summary(row: Row) -> dict[str, Any]:
    """A ``windows`` row as it appears in the run record."""
    return {
        "name": row["name"],
        "started_at": iso_utc(float(row["started_at"])),
        "duration_s": row["duration_s"],
        "energy_j": row["energy_j"],
    }


def build_record(
    row: Row,
    windows: Sequence[Row],
    samples: Iterable[Row] | None,
    *,
    now: float,
    hostname: str,
) -> dict[str, Any]:
    """The run record of one ``runs`` row.

    Args:
        row: The ``runs`` row.
        windows: Its ``windows`` rows, in order.
        samples: Its sample rows, used only when no energy was stored.
        now: Current Unix time (for the status of running runs).
        hostname: This machine's host name.
    """
    run_id = str(row["id"])
    status = effective_status(row, now=now, hostname=hostname)
    energy = loads(row["energy"], None, f"energy of run {run_id}")
    extra = loads(row["extra"], {}, f"extra of run {run_id}")
    if energy is None:
        note = RUNNING_NOTE if status == "running" else PARTIAL_NOTE
        energy = partial_energy(samples or (), note=note, devices=extra.get("measured_devices"))
    record: dict[str, Any] = {
        "id": run_id,
        "name": row["name"],
        "command": loads(row["command"], [], f"command of run {run_id}"),
        "tags": loads(row["tags"], {}, f"tags of run {run_id}"),
        "started_at": iso_utc(float(row["started_at"])),
        "ended_at": iso_utc(row["ended_at"]),
        "duration_s": row["duration_s"],
        "exit_code": row["exit_code"],
        "status": status,
        "energy": energy,
        "environment": loads(row["environment"], {}, f"environment of run {run_id}"),
        "windows": [window_summary(w) for w in windows],
    }
    for key, value in extra.items():  # schema_version (absent: version 1), carbon, cost ...
        record.setdefault(key, value)
    return record


def summary(row: Row, *, now: float, hostname: str) -> dict[str, Any]:
    """The short form of a run for listings."""
    run_id = str(row["id"])
    energy = loads(row["energy"], None, f"energy of run {run_id}")
    total_kwh = energy.get("total_kwh") if isinstance(energy, dict) else None
    return {
        "id": run_id,
        "name": row["name"],
        "status": effective_status(row, now=now, hostname=hostname),
        "started_at": iso_utc(float(row["started_at"])),
        "duration_s": row["duration_s"],
        "total_kwh": total_kwh,
        "exit_code": row["exit_code"],
        "command": loads(row["command"], [], f"command of run {run_id}"),
        "tags": loads(row["tags"], {}, f"tags of run {run_id}"),
    }

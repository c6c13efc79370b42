"""CodeCarbon's output: ``emissions.csv`` (its file output) and the JSON its HTTP/API
outputs send (one emissions object, a list of them, or the API's emission deltas).

CSV rows are cumulative: the last row of a ``run_id`` is the run. The API's emission
objects (``emissions_sum``) are deltas of one run and are summed. CodeCarbon writes
its timestamps in local time without a zone; they are read as UTC, and the run says so.
Energies are kWh and emissions kg CO2eq in CodeCarbon; greenml stores J and g.
"""

from __future__ import annotations

import csv
import io
import json
import math
from datetime import datetime, timezone
from typing import Any

from greenml.errors import ConfigError
from greenml.importers.records import MAX_DURATION_S, ImportedRun, check_figure
from greenml.quantities import J_PER_KWH

TOOL = "codecarbon"
REQUIRED = ("timestamp", "run_id", "duration", "energy_consumed")
_COMPONENTS = (("cpu", "cpu_energy"), ("gpu", "gpu_energy"), ("dram", "ram_energy"))
METHOD = ("CodeCarbon's own: CPU by RAPL or its TDP model, GPU by NVML, RAM by its "
          "power model; tracking_mode {mode}")  # fmt: skip


def parse_codecarbon(text: str, source: str) -> list[ImportedRun]:
    """The runs in a CodeCarbon CSV or JSON export (the format is told by its first character).

    Raises:
        ConfigError: Not a CodeCarbon file, a missing column, or a value that is not a
            finite non-negative number (one line, naming the row).
    """
    stripped = text.lstrip("\ufeff \t\r\n")
    if not stripped:
        raise ConfigError(f"{source} is empty")
    if stripped[0] in "[{":
        return _from_json(stripped, source)
    return _from_csv(text, source)


def _from_csv(text: str, source: str) -> list[ImportedRun]:
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff"), newline=None))
    try:
        columns = reader.fieldnames or []
    except csv.Error as exc:
        raise ConfigError(f"{source}: not a CSV file ({exc})") from None
    missing = [c for c in REQUIRED if c not in columns]
    if missing or not any(c in columns for c in ("emissions", "emissions_sum")):
        raise ConfigError(f"{source} is not a CodeCarbon emissions file "
                          f"(no column {', '.join(missing) or 'emissions'})")  # fmt: skip
    last: dict[str, dict[str, Any]] = {}
    try:
        for row in reader:
            if None in row or any(v is None for v in row.values()):
                raise ConfigError(f"{source} line {reader.line_num}: wrong number of fields")
            last[str(row["run_id"])] = {**row, "_where": f"{source} line {reader.line_num}"}
    except csv.Error as exc:
        raise ConfigError(f"{source}: not a CSV file ({exc})") from None
    if not last:
        raise ConfigError(f"{source} holds no runs")
    return [_run(row, source) for row in last.values()]


def _from_json(text: str, source: str) -> list[ImportedRun]:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"{source} is not JSON: {str(exc).splitlines()[0]}") from None
    items = data if isinstance(data, list) else None
    if isinstance(data, dict):
        items = data.get("items", [data])
    if not isinstance(items, list) or not items or not all(isinstance(i, dict) for i in items):
        raise ConfigError(f"{source}: expected a CodeCarbon emissions object or a list of them")
    runs: dict[str, dict[str, Any]] = {}
    for n, item in enumerate(items, start=1):
        where = f"{source} item {n}"
        missing = [c for c in REQUIRED if c not in item]
        if missing or not any(c in item for c in ("emissions", "emissions_sum")):
            raise ConfigError(f"{where} is not a CodeCarbon emissions object "
                              f"(no {', '.join(missing) or 'emissions'})")  # fmt: skip
        key = str(item["run_id"])
        if "emissions_sum" in item and key in runs:  # API deltas of one run: summed
            runs[key] = _add(runs[key], item, where)
        else:
            runs[key] = {**item, "_where": where}
    return [_run(row, source) for row in runs.values()]


def _add(total: dict[str, Any], delta: dict[str, Any], where: str) -> dict[str, Any]:
    out = dict(total)
    for key in ("duration", "emissions_sum", "energy_consumed", "cpu_energy", "gpu_energy",
                "ram_energy"):  # fmt: skip
        if key in delta:
            out[key] = _number(total.get(key, 0), key, where) + _number(delta[key], key, where)
    out["timestamp"] = max(str(total["timestamp"]), str(delta["timestamp"]))
    return out


def _run(row: dict[str, Any], source: str) -> ImportedRun:
    where = row["_where"]
    duration = check_figure(_number(row["duration"], "duration", where), f"{where}: duration",
                            upper=MAX_DURATION_S)  # fmt: skip
    kwh = _number(row["energy_consumed"], "energy_consumed", where)
    total_j = check_figure(kwh * J_PER_KWH, f"{where}: energy_consumed")
    emissions = row.get("emissions", row.get("emissions_sum"))
    kg = check_figure(_number(emissions, "emissions", where), f"{where}: emissions")
    components = {}
    for name, key in _COMPONENTS:
        if row.get(key) not in (None, ""):
            j = check_figure(_number(row[key], key, where) * J_PER_KWH, f"{where}: {key}")
            if j > 0:
                components[name] = j
    pue = _optional(row.get("pue"), "pue", where)
    parts = sum(components.values())
    notes = ["CodeCarbon's timestamp has no time zone: read as UTC"]
    if pue and pue > 1 and parts > 0 and abs(total_j / parts - pue) < 1e-3 * pue:
        total_j = parts  # energy_consumed had the PUE applied: greenml keeps IT energy
        notes.append(f"CodeCarbon's energy_consumed included its PUE {pue:g}; taken out")
    elif parts == 0 and total_j > 0:
        components["machine"] = total_j
    version = _text(row.get("codecarbon_version"))
    country = _text(row.get("country_name"))
    region = _text(row.get("region")) or _text(row.get("cloud_region"))
    location = ", ".join(p for p in (region, country) if p) or None
    zone = _text(row.get("country_iso_code")) or "an unrecorded country"
    return ImportedRun(
        tool=TOOL,
        tool_version=version,
        method=METHOD.format(mode=_text(row.get("tracking_mode")) or "not recorded"),
        source_file=source,
        source_run_id=str(row["run_id"])[:200],
        ended_at=_when(row["timestamp"], where),
        duration_s=duration,
        components_j=components,
        total_j=total_j,
        co2_g=kg * 1000.0,
        intensity_g_per_kwh=kg * 1000.0 / kwh if kwh > 0 else None,
        intensity_source=f"codecarbon {version or ''}".strip() + f" (its own data for {zone})",
        location=location,
        pue=pue if pue and pue > 1 else None,
        name=_text(row.get("project_name")),
        tags={k: v for k, v in (("codecarbon.experiment_id", _text(row.get("experiment_id"))),
                                ("codecarbon.run_id", str(row["run_id"])[:200])) if v},
        notes=tuple(notes),
        environment=_environment(row),
    )


def _environment(row: dict[str, Any]) -> dict[str, Any]:
    env: dict[str, Any] = {}
    if _text(row.get("python_version")):
        env["python"] = {"version": _text(row.get("python_version"))}
    if _text(row.get("os")):
        env["os"] = {"platform": _text(row.get("os")), "system": _text(row.get("os")).split("-")[0]}
    if _text(row.get("cpu_model")):
        cpu: dict[str, Any] = {"model": _text(row.get("cpu_model"))}
        count = _optional(row.get("cpu_count"), "cpu_count", "")
        if count is not None and count == int(count) and 0 < count < 1e6:
            cpu["logical_cores"] = int(count)
        env["cpu"] = cpu
    gpus = _optional(row.get("gpu_count"), "gpu_count", "") or 0
    if gpus >= 1 and gpus < 1e4 and _text(row.get("gpu_model")):
        model = _text(row.get("gpu_model"))
        names = [n.strip() for n in model.split(",")] if "," in model else [model]
        names = [n.split(" x ", 1)[-1] for n in names]
        env["gpu"] = {"gpus": [{"index": i, "name": names[min(i, len(names) - 1)]}
                               for i in range(int(gpus))]}  # fmt: skip
    return env


def _number(value: Any, what: str, where: str) -> float:
    if isinstance(value, bool):
        raise ConfigError(f"{where}: {what} must be a number, not {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: {what} must be a number, not {str(value)[:40]!r}") from None
    if not math.isfinite(number):
        raise ConfigError(f"{where}: {what} must be finite, not {value!r}")
    return number


def _optional(value: Any, what: str, where: str) -> float | None:
    if value is None or value == "":
        return None
    try:
        return _number(value, what, where)
    except ConfigError:
        return None


def _text(value: Any) -> str:
    return value.strip()[:200] if isinstance(value, str) else ""


def _when(value: Any, where: str) -> datetime:
    try:
        when = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"{where}: timestamp {str(value)[:40]!r} is not an ISO date") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    if not 1981 <= when.year <= 2200:  # minus a duration of up to 10 years, still after 1970
        raise ConfigError(f"{where}: timestamp {str(value)[:40]!r} is out of range")
    return when

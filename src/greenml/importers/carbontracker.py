"""Carbontracker's log directory: per run a ``…_carbontracker.log`` (epochs, average
power per component, PUE, grid intensity) and a ``…_carbontracker_output.log``
(the "Actual consumption" totals), named by one prefix (``PID.TIME_DATE``).

Carbontracker multiplies energy by its PUE; greenml keeps IT energy (the PUE
taken out) and records the PUE beside the carbon figure.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

from greenml.errors import ConfigError
from greenml.importers.records import MAX_DURATION_S, ImportedRun, check_figure
from greenml.quantities import J_PER_KWH

TOOL = "carbontracker"
METHOD = ("Carbontracker's own: average power per component and epoch (RAPL, NVML, or its "
          "TDP model when neither reads), × epoch duration")  # fmt: skip
_SUFFIX = "_carbontracker.log"
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")
_VERSION = re.compile(r"carbontracker version (\S+)")
_PUE = re.compile(r"PUE coefficient of ([0-9.eE+-]+)")
_DURATION = re.compile(r"Duration: (\d+):(\d\d):(\d\d(?:\.\d+)?)")
_POWER = re.compile(r"Average power usage \(W\) for (\w+): ([0-9.eE+-]+|None)")
_INTENSITY = re.compile(r"Average carbon intensity during training was ([0-9.eE+-]+) gCO2eq/kWh")
_LOCATION = re.compile(r"at detected location: ([^:]*):")
_ACTUAL = re.compile(r"Actual consumption[^:]*:\s*Time:\s*(\d+):(\d\d):(\d\d(?:\.\d+)?)\s*"
                     r"Energy:\s*([0-9.eE+-]+) kWh\s*CO2eq:\s*([0-9.eE+-]+) g")  # fmt: skip
_COMPONENT = {"cpu": "cpu", "gpu": "gpu", "dram": "dram", "ram": "dram"}


def parse_carbontracker(log_dir: Path) -> list[ImportedRun]:
    """The finished runs in a Carbontracker log directory.

    Raises:
        ConfigError: Not a directory, no Carbontracker logs, or a log that is not
            Carbontracker's (one line naming the file).
    """
    if not log_dir.is_dir():
        raise ConfigError(f"{log_dir} is not a directory (give Carbontracker's log_dir)")
    standard = sorted(p for p in log_dir.iterdir() if p.name.endswith(_SUFFIX))
    if not standard:
        raise ConfigError(f"{log_dir} holds no Carbontracker logs (*{_SUFFIX})")
    runs = []
    for path in standard:
        output = path.with_name(path.name[: -len(_SUFFIX)] + "_carbontracker_output.log")
        runs.append(parse_run(_read(path), _read(output) if output.exists() else "", str(path)))
    return runs


def parse_run(log: str, output: str, source: str) -> ImportedRun:
    """One run from the text of its standard log and its output log.

    Raises:
        ConfigError: No version line, no actual consumption (the run did not finish),
            or a figure that is not a finite non-negative number.
    """
    version = _VERSION.search(log)
    if version is None:
        raise ConfigError(f"{source} is not a Carbontracker log (no version line)")
    actual = _ACTUAL.search(output) or _ACTUAL.search(log)
    if actual is None:
        raise ConfigError(f"{source}: no 'Actual consumption' (the run did not finish)")
    h, m, s, kwh, grams = actual.groups()
    duration = check_figure(int(h) * 3600 + int(m) * 60 + float(s), f"{source}: time",
                            upper=MAX_DURATION_S)  # fmt: skip
    pue_match = _PUE.search(log)
    pue = 1.0
    if pue_match:
        pue = check_figure(_float(pue_match.group(1), source), f"{source}: PUE", upper=10)
    if pue < 1:
        raise ConfigError(f"{source}: PUE {pue:g} is below 1")
    facility_j = check_figure(_float(kwh, source) * J_PER_KWH, f"{source}: energy")
    co2_g = check_figure(_float(grams, source), f"{source}: CO2eq")
    total_j = facility_j / pue
    components = _components(log, source)
    parts = sum(components.values())
    notes = [f"Carbontracker's energy included its PUE {pue:g}; taken out",
             "Carbontracker's log times have no time zone: read as UTC"]
    if parts > 0:  # per-epoch power × duration, scaled to the run's total
        components = {k: v * total_j / parts for k, v in components.items()}
    else:
        components = {"machine": total_j}
        notes.append("no per-component power in the log: one machine figure")
    intensity = _INTENSITY.search(log)
    grid = (check_figure(_float(intensity.group(1), source), f"{source}: intensity")
            if intensity else co2_g * J_PER_KWH / facility_j if facility_j > 0 else None)
    location = _LOCATION.search(log)
    stamps = _STAMP.findall(log) or _STAMP.findall(output)
    ended = _when(stamps[-1] if stamps else "", source)
    return ImportedRun(
        tool=TOOL,
        tool_version=version.group(1)[:40],
        method=METHOD,
        source_file=source,
        source_run_id=Path(source).name,
        ended_at=ended,
        duration_s=duration,
        components_j=components,
        total_j=total_j,
        co2_g=co2_g,
        intensity_g_per_kwh=grid,
        intensity_source=f"carbontracker {version.group(1)[:40]} (its own provider or default)",
        location=(location.group(1).strip()[:100] or None) if location else None,
        pue=pue,
        name=None,
        tags={"carbontracker.log": Path(source).name[:200]},
        notes=tuple(notes),
    )


def _components(log: str, source: str) -> dict[str, float]:
    """Energy per component: each epoch's average power × its duration."""
    out: dict[str, float] = {}
    for epoch in re.split(r"Epoch \d+:", log)[1:]:
        duration = _DURATION.search(epoch)
        if duration is None:
            continue
        h, m, s = duration.groups()
        seconds = int(h) * 3600 + int(m) * 60 + float(s)
        for kind, watts in _POWER.findall(epoch):
            if watts == "None" or kind.lower() not in _COMPONENT:
                continue
            w = check_figure(_float(watts, source), f"{source}: power of {kind}", upper=1e7)
            name = _COMPONENT[kind.lower()]
            out[name] = out.get(name, 0.0) + w * seconds
    return out


def _float(text: str, source: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ConfigError(f"{source}: {text[:40]!r} is not a number") from None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None


def _when(stamp: str, source: str) -> datetime:
    try:
        when = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
    except ValueError:
        raise ConfigError(f"{source}: no time stamp in the log") from None
    if when.year < 1981:
        raise ConfigError(f"{source}: time stamp {stamp} is out of range")
    return when

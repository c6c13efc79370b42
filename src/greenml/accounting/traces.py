"""Hourly (or finer) carbon-intensity traces read from CSV files.

Two formats are read:

- Electricity Maps' CSV export (``Datetime (UTC),Country,Zone Name,Zone Id,
  Carbon Intensity gCO₂eq/kWh (direct),Carbon Intensity gCO₂eq/kWh (LCA),…``);
  ``column`` picks the direct or the life-cycle values;
- a plain two-column CSV, ``time,g_per_kwh`` (any header whose second column
  is the intensity, or none); ``column`` states which scope its values are.

Times are ISO 8601; a time without an offset is UTC. A :class:`TraceSource`
answers only for spans its data covers; otherwise it raises, or, when the
user asked for one, uses a fallback source and says so in the provenance.

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from greenml.accounting.intensity import (
    GridIntensity,
    IntensityProvenance,
    IntensitySource,
    Resolution,
)
from greenml.accounting.series import StepSeries
from greenml.accounting.trace_csv import Column, read_trace_csv
from greenml.errors import ConfigError

__all__ = ["Column", "TraceSource", "load_trace"]

_GAP_S = 3600.0  # a step longer than twice the usual one and by an hour is a gap in the data


class TraceSource:
    """An intensity time series from a file; an :class:`IntensitySource`.

    Attributes:
        series: The values (g/kWh), each holding until the next time.
        provenance: Where they come from, with the detected resolution.
        name: The file's name, for messages.
        fallback: The source used, and labelled, for spans the trace lacks.
    """

    def __init__(
        self,
        series: StepSeries,
        provenance: IntensityProvenance,
        name: str,
        *,
        fallback: IntensitySource | None = None,
    ) -> None:
        import numpy as np

        self.series = series
        self.provenance = provenance
        self.name = name
        self.fallback = fallback
        usual = series.last_step_s
        gap = np.flatnonzero(np.diff(series.times_s) > max(2 * usual, usual + _GAP_S))
        # Spans inside the trace with no value: from a usual step after a time to the next time.
        self.gaps = [
            (float(series.times_s[i]) + series.last_step_s, float(series.times_s[i + 1]))
            for i in gap
        ]

    def intensity(self, start_s: float, end_s: float) -> GridIntensity:
        """The trace if it covers [start_s, end_s], else the fallback, labelled.

        Raises:
            ConfigError: The trace misses part of the span and no fallback was given.
        """
        missing = self._missing(start_s, end_s)
        if missing is None:
            return GridIntensity(self.series, self.provenance)
        reason = (
            f"trace {self.name} covers {_when(self.series.start_s)} to "
            f"{_when(self.series.end_s)}; the run needs {_span(start_s, end_s)}"
        )
        inside = self.series.start_s < missing[0] and missing[1] < self.series.end_s
        if inside or missing != (start_s, end_s):
            gap = ", a gap in the trace" if inside else ""
            reason += f" (no data for {_span(*missing)}{gap})"
        if self.fallback is None:
            raise ConfigError(reason)
        used = self.fallback.intensity(start_s, end_s)
        source = f"{used.provenance.source} [fallback: {reason}]"
        return GridIntensity(used.series, replace(used.provenance, source=source))

    def _missing(self, start_s: float, end_s: float) -> tuple[float, float] | None:
        """The first part of [start_s, end_s] without data, or None."""
        s = self.series
        if start_s < s.start_s:
            return start_s, min(end_s, s.start_s)
        for a, b in self.gaps:
            if a < end_s and start_s < b:
                return max(a, start_s), min(b, end_s)
        if end_s > s.end_s:
            return max(start_s, s.end_s), end_s
        return None


SAMPLES = ("DE-LU_2023_sample.csv", "GB_2023_sample.csv")
"""Traces shipped with greenml (``greenml/data/traces``; see its SOURCES.md)."""


def _packaged_sample(path: Path) -> tuple[Path, bool]:
    """The packaged sample a missing file's name names, else the path as given."""
    if path.exists() or path.name not in SAMPLES:
        return path, False
    from greenml.data import packaged

    return packaged("traces", path.name), True


def load_trace(
    path: str | Path,
    column: Column = "lifecycle",
    *,
    location: str | None = None,
    fallback: IntensitySource | None = None,
) -> TraceSource:
    """Read an intensity trace (Electricity Maps export or ``time,g_per_kwh`` CSV).

    Args:
        path: The CSV file; the name of a packaged sample (:data:`SAMPLES`) when
            no such file exists (its source then says so).
        column: ``lifecycle`` or ``direct``: the Electricity Maps column to
            read, or the scope of a plain file's values.
        location: The location the trace applies to; defaults to the
            export's zone id, or ``-`` for a plain file.
        fallback: A source to use, labelled, for spans the trace lacks.

    Raises:
        ConfigError: Unreadable file, malformed row (with file and line),
            times not increasing, or steps coarser than an hour.
    """
    path, sample = _packaged_sample(Path(path))
    table = read_trace_csv(path, column)
    if table.export:
        source = f"Electricity Maps CSV export ({path.name})"
    else:
        source = f"trace file {path.name}"
    if sample:
        source += ", packaged sample: six weeks of 2023, data: Electricity Maps"
    step = _step(path, table.times_s)
    resolution: Resolution = "hourly" if step == 3600.0 else "sub-hourly"
    series = StepSeries(table.times_s, table.values, step, "g/kWh")
    where = location or table.zone or "-"
    provenance = IntensityProvenance(source, where, resolution, "average", column)
    return TraceSource(series, provenance, path.name, fallback=fallback)


def _step(path: Path, times_s: Any) -> float:
    """The usual step (median), at most an hour; an hour for a single row."""
    if len(times_s) < 2:
        return 3600.0
    import numpy as np

    step = float(np.median(np.diff(times_s)))
    if step > 3600.0:
        raise ConfigError(
            f"{path}: values every {step / 3600:g} h; a trace must be hourly or finer "
            "(use a yearly figure for coarser data)"
        )
    return step


def _when(time_s: float) -> str:
    return datetime.fromtimestamp(time_s, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _span(start_s: float, end_s: float) -> str:
    """``2024-03-02 10:00 to 11:00 UTC``; the date repeated only when it changes."""
    a = datetime.fromtimestamp(start_s, tz=timezone.utc)
    b = datetime.fromtimestamp(end_s, tz=timezone.utc)
    tail = b.strftime("%H:%M" if a.date() == b.date() else "%Y-%m-%d %H:%M")
    return f"{a:%Y-%m-%d %H:%M} to {tail} UTC"

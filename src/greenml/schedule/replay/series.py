"""A carbon-intensity trace on the 30-minute grid of the replay, with its local calendar.

The replay of Wiesner et al. ("Let's Wait Awhile", Middleware 2021) works on
half-hour slots. A trace finer than that is reduced to its ``:00`` and ``:30``
points; an hourly trace holds each value for both half hours (the value at a
grid point is the step series' value there). Slots inside a gap of the trace
are NaN: jobs whose window touches one are left out, never filled in.

Slot ``i`` covers ``[start_s + i·1800, start_s + (i+1)·1800)``; boundary ``b``
is the time ``start_s + b·1800`` (``n + 1`` boundaries for ``n`` slots). The
calendar (weekday, minute of day) is given for every boundary, in the time
zone the job rules are read in.

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from greenml.accounting.traces import load_trace
from greenml.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

    from greenml.accounting.trace_csv import Column

SLOT_S = 1800.0
MINUTES_PER_DAY = 1440


@dataclass(frozen=True)
class HalfHourTrace:
    """Intensity per half-hour slot and the local calendar of each slot boundary.

    Attributes:
        start_s: Unix time of boundary 0 (a ``:00`` or ``:30`` UTC point).
        values: g/kWh per slot (float64, NaN where the trace has no data).
        weekday: Local weekday of each boundary, 0 = Monday (``n + 1`` entries).
        minute: Local minute of the day of each boundary, floored to 30 min.
        name: The trace's name, for messages.
        source: Where the values come from (provenance, one line).
        tz: The time zone of the calendar (an IANA name, or ``UTC``).
    """

    start_s: float
    values: np.ndarray[Any, Any]
    weekday: np.ndarray[Any, Any]
    minute: np.ndarray[Any, Any]
    name: str
    source: str
    tz: str = "UTC"

    @property
    def n(self) -> int:
        """Number of slots."""
        return len(self.values)

    def time_s(self, boundary: int) -> float:
        """Unix time of a slot boundary."""
        return self.start_s + boundary * SLOT_S

    def span(self) -> str:
        """``2023-01-01 00:00 to 2024-01-01 00:00 UTC``: what the grid covers."""
        return f"{when(self.start_s)} to {when(self.time_s(self.n))}"


def when(time_s: float) -> str:
    """A Unix time as ``2023-01-01 00:00 UTC``."""
    return datetime.fromtimestamp(time_s, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def load_half_hourly(
    path: str | Path, *, column: Column = "lifecycle", tz: str = "UTC"
) -> HalfHourTrace:
    """Read a trace (Electricity Maps export or ``time,intensity`` CSV) onto the 30-min grid.

    Args:
        path: The CSV file, read by greenml's trace reader.
        column: ``lifecycle`` or ``direct`` (the export's column; a plain file's scope).
        tz: Time zone of the job rules (``01:00``, workdays): an IANA name or ``UTC``.

    Raises:
        ConfigError: Unreadable or malformed file, an unknown time zone, or a
            trace shorter than one half hour.
    """
    trace = load_trace(path, column)
    s = trace.series
    start_s, values = half_hourly(s.times_s, s.values, s.end_s, trace.gaps)
    if len(values) == 0:
        raise ConfigError(f"trace {trace.name} covers less than one half hour on the :00/:30 grid")
    weekday, minute = local_calendar(start_s, len(values) + 1, tz)
    return HalfHourTrace(
        start_s, values, weekday, minute, trace.name, trace.provenance.describe(), tz
    )


def half_hourly(
    times_s: Any, values: Any, end_s: float, gaps: list[tuple[float, float]] | None = None
) -> tuple[float, np.ndarray[Any, Any]]:
    """Sample a step series at the ``:00``/``:30`` points it covers.

    Args:
        times_s: Start of each step (Unix seconds, increasing).
        values: Value of each step.
        end_s: When the last step ends.
        gaps: Spans without data; slots that overlap one are NaN.

    Returns:
        (time of slot 0, value of each slot).
    """
    import numpy as np

    t = np.asarray(times_s, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    first = float(np.ceil(t[0] / SLOT_S) * SLOT_S)
    n = max(0, int(np.floor((end_s - first) / SLOT_S)))
    grid = first + SLOT_S * np.arange(n)
    out = v[np.searchsorted(t, grid, side="right") - 1].copy()
    for a, b in gaps or []:
        out[(grid < b) & (grid + SLOT_S > a)] = np.nan
    return first, out


def local_calendar(
    start_s: float, boundaries: int, tz: str
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """(weekday, minute of day) of each slot boundary in time zone ``tz``.

    Minutes are floored to the half hour, so a zone whose offset is not a
    multiple of 30 minutes still has ``09:00`` boundaries.

    Raises:
        ConfigError: ``tz`` is not a known IANA time zone.
    """
    day, minute = local_days(start_s, boundaries, tz)
    weekday = (day + 3) % 7  # 1970-01-01 was a Thursday
    return weekday, minute


def local_days(
    start_s: float, boundaries: int, tz: str
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """(local day number since 1970-01-01, minute of day floored to 30) of each boundary.

    Raises:
        ConfigError: ``tz`` is not a known IANA time zone.
    """
    import numpy as np

    times = start_s + SLOT_S * np.arange(boundaries)
    offsets = _utc_offsets_s(times, tz)
    local = (times + offsets) // 60  # local minutes since the epoch
    day = (local // MINUTES_PER_DAY).astype(np.int64)
    minute = ((local % MINUTES_PER_DAY) // 30 * 30).astype(np.int64)
    return day, minute


def _utc_offsets_s(times: np.ndarray[Any, Any], tz: str) -> np.ndarray[Any, Any]:
    """UTC offset (seconds) at each time; computed per day, per slot only on change days."""
    import numpy as np

    if tz.upper() in ("UTC", "Z", "ETC/UTC"):
        return np.zeros(len(times))

    try:
        zone = ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"unknown time zone {tz!r}: use an IANA name (Europe/Berlin)") from None

    def offset(t: float) -> float:
        delta = datetime.fromtimestamp(t, tz=zone).utcoffset()
        return delta.total_seconds() if delta is not None else 0.0

    per_day = 48  # slots in a day: offsets change at most a few times a year
    out = np.empty(len(times))
    for i in range(0, len(times), per_day):
        j = min(i + per_day, len(times))
        a, b = offset(float(times[i])), offset(float(times[j - 1]))
        if a == b:
            out[i:j] = a
        else:
            out[i:j] = [offset(float(t)) for t in times[i:j]]
    return out

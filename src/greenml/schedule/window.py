"""The best contiguous window: time-weighted rolling mean of a step series, partial steps included.

This is the Green Software Foundation Carbon Aware SDK's method: the mean of
the series over [start, start + duration], each step weighted by how much of
it the window overlaps, so a window may start or end inside a step. The mean
is piecewise linear in the start time between two instants where the start or
the end crosses a step boundary, so the best start is among the boundaries
(start-aligned), the boundaries minus the duration (end-aligned) and the two
ends of the allowed span: those candidates are evaluated all at once from the
cumulative integral of the series (numpy), so a year-long span costs
milliseconds. Ties go to the earliest start.

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from greenml.accounting.series import StepSeries
from greenml.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

# Two means closer than this (relative) are a tie; the earlier start wins.
TIE_REL = 1e-9


@dataclass(frozen=True)
class Window:
    """A contiguous run of the job and the series' mean over it.

    Attributes:
        start_s: Start (Unix seconds).
        end_s: End (Unix seconds).
        mean: Time-weighted mean of the series over [start_s, end_s].
    """

    start_s: float
    end_s: float
    mean: float


class Integral:
    """∫ series dt from ``start_s``, evaluated at many times at once.

    Args:
        series: The step series.
        start_s: Start of the span the integral is needed on.
        end_s: End of that span.
        what: Names the series in the error message.

    Raises:
        ConfigError: The series does not cover [start_s, end_s]; the message
            names the missing span.
    """

    def __init__(
        self, series: StepSeries, start_s: float, end_s: float, what: str = "the series"
    ) -> None:
        import numpy as np

        require_cover(series, start_s, end_s, what)
        inside = (series.times_s > start_s) & (series.times_s < end_s)
        self.times_s = np.concatenate(([start_s], series.times_s[inside]))
        first = int(np.searchsorted(series.times_s, start_s, side="right")) - 1
        self.values = np.concatenate(([series.values[first]], series.values[inside]))
        widths = np.diff(np.append(self.times_s, end_s))
        self.cumulative = np.concatenate(([0.0], np.cumsum(self.values * widths)))
        self.start_s, self.end_s = float(start_s), float(end_s)

    def at(self, times_s: Any) -> np.ndarray[Any, Any]:
        """The integral from ``start_s`` to each time (times inside the span)."""
        import numpy as np

        x = np.asarray(times_s, dtype=np.float64)
        index = np.clip(np.searchsorted(self.times_s, x, side="right") - 1, 0, None)
        return self.cumulative[index] + self.values[index] * (x - self.times_s[index])  # type: ignore[no-any-return]

    def mean(self, starts_s: Any, ends_s: Any) -> np.ndarray[Any, Any]:
        """Time-weighted mean over each [start, end] (the value at start when empty)."""
        import numpy as np

        a = np.asarray(starts_s, dtype=np.float64)
        b = np.asarray(ends_s, dtype=np.float64)
        width = b - a
        safe = np.where(width > 0, width, 1.0)
        at_start = self.values[np.clip(np.searchsorted(self.times_s, a, side="right") - 1, 0, None)]
        return np.where(width > 0, (self.at(b) - self.at(a)) / safe, at_start)  # type: ignore[no-any-return]


def require_cover(series: StepSeries, start_s: float, end_s: float, what: str) -> None:
    """ConfigError naming the missing span when ``series`` does not cover [start_s, end_s]."""
    if series.covers(start_s, end_s):
        return
    if start_s < series.start_s:
        missing = (start_s, min(end_s, series.start_s))
    else:
        missing = (max(start_s, series.end_s), end_s)
    raise ConfigError(
        f"{what} covers {_iso(series.start_s)} to {_iso(series.end_s)}; "
        f"no data for {_iso(missing[0])} to {_iso(missing[1])}, "
        f"which the window {_iso(start_s)} to {_iso(end_s)} needs"
    )


def candidate_starts(
    grids_s: Sequence[Any], earliest_s: float, latest_end_s: float, duration_s: float
) -> np.ndarray[Any, Any]:
    """Every start where the rolling mean can be least: boundaries of the grids,
    the same minus the duration (end-aligned), and both ends of the span."""
    import numpy as np

    last_start = latest_end_s - duration_s
    if last_start < earliest_s - 1e-6:
        raise ConfigError("the span is shorter than the job")
    last_start = max(last_start, earliest_s)
    parts = [np.array([earliest_s, last_start])]
    for grid in grids_s:
        g = np.asarray(grid, dtype=np.float64)
        parts += [g, g - duration_s]
    starts = np.unique(np.concatenate(parts))
    return starts[(starts >= earliest_s) & (starts <= last_start)]  # type: ignore[no-any-return]


def first_minimum(values: Any) -> int:
    """Index of the first value within a relative tie of the smallest (NaN never wins)."""
    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(v)
    if not finite.any():
        raise ConfigError("no candidate has a value (the series has no data there)")
    low = float(np.min(v[finite]))
    tie = TIE_REL * max(abs(low), float(np.max(np.abs(v[finite]))), 1e-12)
    return int(np.flatnonzero(finite & (v <= low + tie))[0])


def window_means(
    series: StepSeries, earliest_s: float, latest_end_s: float, duration_s: float
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Candidate starts and the series' mean over [start, start + duration] for each.

    Raises:
        ConfigError: The series does not cover the span, or the span is
            shorter than the duration.
    """
    integral = Integral(series, earliest_s, latest_end_s)
    starts = candidate_starts([integral.times_s], earliest_s, latest_end_s, duration_s)
    return starts, integral.mean(starts, starts + duration_s)


def best_window(
    series: StepSeries, earliest_s: float, latest_end_s: float, duration_s: float
) -> Window:
    """The contiguous window of least time-weighted mean (earliest among ties).

    Args:
        series: The values to minimise (intensity, price or a blended score).
        earliest_s: The window may not start before this.
        latest_end_s: The window must end by this.
        duration_s: Its length.

    Raises:
        ConfigError: The series does not cover [earliest_s, latest_end_s]
            (naming the missing span), or the span is too short.
    """
    if not (math.isfinite(duration_s) and duration_s > 0):
        raise ConfigError(f"a window needs a positive duration, got {duration_s:g} s")
    starts, means = window_means(series, earliest_s, latest_end_s, duration_s)
    i = first_minimum(means)
    return Window(float(starts[i]), float(starts[i]) + duration_s, float(means[i]))


def _iso(time_s: float) -> str:
    if not math.isfinite(time_s):
        return "the beginning" if time_s < 0 else "the end of time"
    return datetime.fromtimestamp(time_s, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

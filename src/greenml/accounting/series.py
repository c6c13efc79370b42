"""Step series over time (grid intensity, electricity price) and energy integrated against them.

A :class:`StepSeries` holds a value from each timestamp until the next one;
the last value holds for ``last_step_s``. A constant (a yearly average) is a
series with one step that covers all time.

:func:`weighted_total` is the time-weighted product the carbon and cost
accounting need: ∑ energy used during step i × value of step i, with the
energy taken from the run's own power timeline, not spread evenly.

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class StepSeries:
    """Values that hold from each time (Unix seconds, sorted) until the next.

    Attributes:
        times_s: Start of each step, strictly increasing (numpy float64 array).
        values: Value of each step (numpy float64 array, same length).
        last_step_s: How long the last value holds (``inf`` for a constant).
        unit: Unit of the values, e.g. ``g/kWh`` or ``USD/MWh``.
    """

    times_s: np.ndarray[Any, Any]
    values: np.ndarray[Any, Any]
    last_step_s: float
    unit: str

    @classmethod
    def constant(cls, value: float, unit: str) -> StepSeries:
        """One value for all time (a yearly or a user-given figure)."""
        import numpy as np

        return cls(np.array([-math.inf]), np.array([float(value)]), math.inf, unit)

    @classmethod
    def from_points(
        cls, times_s: Any, values: Any, unit: str, last_step_s: float | None = None
    ) -> StepSeries:
        """Build from sequences; ``last_step_s`` defaults to the median step."""
        import numpy as np

        t = np.asarray(times_s, dtype=np.float64)
        v = np.asarray(values, dtype=np.float64)
        if t.ndim != 1 or t.shape != v.shape or len(t) == 0:
            raise ConfigError("a series needs as many values as times, at least one")
        if np.any(np.diff(t) <= 0):
            raise ConfigError("series times must be strictly increasing")
        if last_step_s is None:
            last_step_s = float(np.median(np.diff(t))) if len(t) > 1 else 3600.0
        return cls(t, v, float(last_step_s), unit)

    @property
    def start_s(self) -> float:
        return float(self.times_s[0])

    @property
    def end_s(self) -> float:
        if math.isinf(self.last_step_s):
            return math.inf
        return float(self.times_s[-1]) + self.last_step_s

    def covers(self, start_s: float, end_s: float) -> bool:
        """Whether every instant of [start_s, end_s] has a value."""
        return self.start_s <= start_s and end_s <= self.end_s

    def value_at(self, time_s: float) -> float:
        """The value in force at a time; ConfigError outside the series."""
        import numpy as np

        if not self.covers(time_s, time_s):
            raise ConfigError(f"no value at {time_s:.0f} (series covers {self._span()})")
        return float(self.values[int(np.searchsorted(self.times_s, time_s, side="right")) - 1])

    def mean(self, start_s: float, end_s: float) -> float:
        """Time-weighted mean over [start_s, end_s]."""
        if end_s <= start_s:
            return self.value_at(start_s)
        ones = _Ramp(start_s, end_s)
        return weighted_total(ones.times, ones.cumulative, self) / (end_s - start_s)

    def _span(self) -> str:
        return f"{_iso(self.start_s)} to {_iso(self.end_s)}"


class _Ramp:
    """A profile using one unit per second between two times (for means)."""

    def __init__(self, start_s: float, end_s: float) -> None:
        import numpy as np

        self.times = np.array([start_s, end_s])
        self.cumulative = np.array([0.0, end_s - start_s])


def weighted_total(times_s: Any, cumulative: Any, series: StepSeries) -> float:
    """∑ over steps of (quantity used during the step) × (step value).

    Args:
        times_s: Sorted times (Unix seconds) of a cumulative quantity, e.g.
            the run's energy so far (joules) at each power sample.
        cumulative: The quantity used from the first time up to each time,
            non-decreasing; linear in between (trapezoid-integrated power).
        series: The values to weight with; it must cover the whole span.

    Returns:
        The weighted total, in (quantity unit) × (series unit).

    Raises:
        ConfigError: The series does not cover the span of ``times_s``.
    """
    import numpy as np

    t = np.asarray(times_s, dtype=np.float64)
    c = np.asarray(cumulative, dtype=np.float64)
    if len(t) < 2:
        return 0.0
    start, end = float(t[0]), float(t[-1])
    if not series.covers(start, end):
        raise ConfigError(
            f"{series.unit} series covers {series._span()}, not the run's "
            f"{_iso(start)} to {_iso(end)}"
        )
    # Step boundaries inside the span, plus the span's own ends.
    inner = series.times_s[(series.times_s > start) & (series.times_s < end)]
    edges = np.concatenate(([start], inner, [end]))
    used = np.diff(np.interp(edges, t, c))
    index = np.searchsorted(series.times_s, edges[:-1], side="right") - 1
    return float(np.dot(used, series.values[index]))


def _iso(time_s: float) -> str:
    if not math.isfinite(time_s):
        return "the beginning" if time_s < 0 else "the end of time"
    return datetime.fromtimestamp(time_s, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

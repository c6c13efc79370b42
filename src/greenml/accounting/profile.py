"""The time profile of a run's energy: when its joules were used.

Carbon and cost are weighted by *when* the energy was used. Energy counters
give the best total but no time profile; the sampled power timeline gives the
profile. :func:`energy_profile` keeps the counters' total and takes only the
shape from the timeline: the timeline's cumulative energy is scaled so that it
ends at the measured total. With no usable timeline, the energy is spread
evenly over the run, and the profile says so.

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from greenml.accounting.series import weighted_total
from greenml.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

    from greenml.accounting.series import StepSeries

EVEN_SPREAD_NOTE = "energy spread evenly over the run (no power timeline)"


@dataclass(frozen=True)
class EnergyProfile:
    """Cumulative energy (joules) at each time (Unix seconds), linear in between.

    Attributes:
        times_s: Sorted times, at least two (the run's start and end at least).
        cumulative_j: Energy used from the first time up to each time; the
            last value is the measured total.
        evenly: True when no timeline was usable and the energy was spread evenly.
    """

    times_s: np.ndarray[Any, Any]
    cumulative_j: np.ndarray[Any, Any]
    evenly: bool

    @property
    def total_j(self) -> float:
        return float(self.cumulative_j[-1])

    @property
    def duration_s(self) -> float:
        return float(self.times_s[-1] - self.times_s[0])

    def weighted(self, series: StepSeries, scale: float = 1.0) -> float:
        """∑ (energy in each step × ``scale``) × step value (``series.weighted_total``).

        A profile of zero duration takes the value in force at its instant.

        Raises:
            ConfigError: The series does not cover the profile's span.
        """
        if self.duration_s <= 0:
            return self.total_j * scale * series.value_at(float(self.times_s[0]))
        return weighted_total(self.times_s, self.cumulative_j * scale, series)


def energy_profile(
    times_s: Sequence[float] | Any,
    power_w: Sequence[float] | Any,
    measured_j: float,
    *,
    start_s: float | None = None,
    end_s: float | None = None,
) -> EnergyProfile:
    """The run's energy over time: the timeline's shape, the measured total.

    Args:
        times_s: Times of the total power timeline (Unix seconds).
        power_w: Total power at those times (watts, all devices).
        measured_j: The run's measured energy (counters where available).
        start_s: Start of the run; the timeline is clipped or extended to it
            (power held constant beyond the first and last readings).
        end_s: End of the run.

    Raises:
        ConfigError: Times and powers differ in length, or there is neither a
            timeline nor a span to spread the energy over.
    """
    import numpy as np

    t = np.asarray(times_s, dtype=np.float64)
    p = np.asarray(power_w, dtype=np.float64)
    if t.shape != p.shape or t.ndim != 1:
        raise ConfigError("a power timeline needs as many powers as times")
    if not (np.isfinite(t).all() and np.isfinite(p).all()):
        keep = np.isfinite(t) & np.isfinite(p)
        t, p = t[keep], p[keep]
    if len(p) and p.min() < 0:
        p = np.maximum(p, 0.0)
    if len(t) > 1 and np.any(np.diff(t) < 0):
        order = np.argsort(t, kind="stable")
        t, p = t[order], p[order]
    lo = float(t[0]) if start_s is None and len(t) else start_s
    hi = float(t[-1]) if end_s is None and len(t) else end_s
    if lo is None or hi is None:
        raise ConfigError("no power timeline and no run span: cannot place the energy in time")
    hi = max(hi, lo)
    measured = max(float(measured_j), 0.0)
    if len(t) >= 2 and hi > lo:
        # Readings strictly inside the span as they are; the ends interpolated
        # (held constant beyond the first and last readings).
        i0 = int(np.searchsorted(t, lo, side="right"))
        i1 = int(np.searchsorted(t, hi, side="left"))
        ends = np.interp([lo, hi], t, p)
        grid = np.concatenate(([lo], t[i0:i1], [hi]))
        watts = np.concatenate((ends[:1], p[i0:i1], ends[1:]))
        steps = (watts[1:] + watts[:-1]) * np.diff(grid)
        steps *= 0.5
        total = float(steps.sum())
        if total > 0:
            cumulative = np.concatenate(([0.0], np.cumsum(steps)))
            cumulative *= measured / total
            cumulative[-1] = measured  # exact, whatever the rounding
            return EnergyProfile(grid, cumulative, evenly=False)
    return EnergyProfile(np.array([lo, hi]), np.array([0.0, measured]), evenly=True)


def total_power(
    timelines: Iterable[tuple[Sequence[float], Sequence[float]]],
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Sum per-device (times, watts) timelines into one, on the union of their times.

    Each device's power is interpolated linearly between its readings and held
    constant beyond its first and last ones (as the Meter integrates it).
    """
    import numpy as np

    lines = []
    for times, powers in timelines:
        t = np.asarray(times, dtype=np.float64)
        p = np.asarray(powers, dtype=np.float64)
        if len(t) and t.shape == p.shape:
            lines.append((t, p))
    if not lines:
        return np.empty(0), np.empty(0)
    if len(lines) == 1:
        return lines[0]
    grid = np.unique(np.concatenate([t for t, _ in lines]))
    total = np.zeros_like(grid)
    for t, p in lines:
        total += np.interp(grid, t, p)
    return grid, total

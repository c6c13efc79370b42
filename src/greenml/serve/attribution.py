"""Energy per request under concurrency: each instant's power shared by the requests in flight.

Given a power timeline (watts at sample times) and request intervals, request
*r* is charged ``∫ P(t) / n(t) dt`` over its interval, where ``n(t)`` is the
number of requests in flight at ``t``. Energy drawn while no request is in
flight is *idle* energy: it is reported apart, never charged to requests.

``n(t)`` only changes at request starts and ends, so between two consecutive
boundaries the share is the energy of that segment divided by ``n``; the
energy of a segment comes from the cumulative integral of the power model.
The result is exact for the power model chosen: ``linear`` (the Meter's
trapezoid rule) or ``step`` (each reading held until the next one,
piecewise-constant power). Power is held constant before the first reading and
after the last, as :class:`greenml.measure.timeline.PowerTimeline` does.

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from greenml.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Floats = npt.NDArray[np.float64]

Interpolation = Literal["linear", "step"]


@dataclass(frozen=True)
class Attribution:
    """What :func:`attribute_energy` found.

    Attributes:
        energy_j: Energy charged to each request, in the order given.
        idle_energy_j: Energy over ``span`` while no request was in flight.
        busy_energy_j: Energy over ``span`` while at least one request was in flight.
        span_s: The (start, end) over which idle and busy energy were summed.
    """

    energy_j: Floats
    idle_energy_j: float
    busy_energy_j: float
    span_s: tuple[float, float]


def attribute_energy(
    times_s: Sequence[float] | Floats,
    power_w: Sequence[float] | Floats,
    starts_s: Sequence[float] | Floats,
    ends_s: Sequence[float] | Floats,
    *,
    span_s: tuple[float, float] | None = None,
    interpolation: Interpolation = "linear",
) -> Attribution:
    """Share sampled power among overlapping requests by time overlap.

    Args:
        times_s: Sample times, strictly increasing.
        power_w: Watts at those times.
        starts_s: Request start times (same clock as ``times_s``).
        ends_s: Request end times, each ``>=`` its start.
        span_s: Window for the idle/busy split; default: first to last sample.
        interpolation: ``linear`` (trapezoid, as the Meter integrates) or
            ``step`` (piecewise-constant power).

    Raises:
        ConfigError: Empty or mismatched inputs, times going backwards, an
            interval ending before it starts, or an unknown interpolation.
    """
    import numpy as np

    t = np.asarray(times_s, dtype=np.float64)
    p = np.asarray(power_w, dtype=np.float64)
    starts = np.asarray(starts_s, dtype=np.float64)
    ends = np.asarray(ends_s, dtype=np.float64)
    _check(t, p, starts, ends, interpolation)
    span = (float(t[0]), float(t[-1])) if span_s is None else span_s
    if not span[1] >= span[0]:
        raise ConfigError(f"the span must not end before it starts, got {span}")
    bounds = np.unique(np.concatenate([starts, ends, np.asarray(span, dtype=np.float64)]))
    energy = cumulative_energy_j(t, p, bounds, interpolation)
    segment_j = np.diff(energy)
    left = bounds[:-1]
    # requests in flight on [left, next boundary): started at or before, not yet ended
    in_flight = np.searchsorted(np.sort(starts), left, side="right") - np.searchsorted(
        np.sort(ends), left, side="right"
    )
    share_j = np.divide(segment_j, in_flight, out=np.zeros_like(segment_j), where=in_flight > 0)
    prefix = np.concatenate([[0.0], np.cumsum(share_j)])
    per_request = prefix[np.searchsorted(bounds, ends)] - prefix[np.searchsorted(bounds, starts)]
    inside = (left >= span[0]) & (left < span[1])
    idle = float(segment_j[inside & (in_flight == 0)].sum())
    busy = float(segment_j[inside & (in_flight > 0)].sum())
    return Attribution(per_request, idle, busy, (float(span[0]), float(span[1])))


def cumulative_energy_j(
    times_s: Floats, power_w: Floats, at_s: Floats, interpolation: Interpolation = "linear"
) -> Floats:
    """Joules from the first sample to each of ``at_s`` (negative before it), vectorized."""
    import numpy as np

    t, p = times_s, power_w
    dt = np.diff(t)
    steps = 0.5 * (p[:-1] + p[1:]) * dt if interpolation == "linear" else p[:-1] * dt
    cum = np.concatenate([[0.0], np.cumsum(steps)])
    i = np.clip(np.searchsorted(t, at_s, side="right") - 1, 0, len(t) - 1)
    x = at_s - t[i]  # negative only before the first sample (i == 0)
    out = cum[i] + p[i] * x
    if interpolation == "linear" and len(t) > 1:
        interior = (i < len(t) - 1) & (x > 0)
        j = i[interior]
        slope = (p[j + 1] - p[j]) / (t[j + 1] - t[j])
        out[interior] += 0.5 * slope * x[interior] ** 2
    result: Floats = out
    return result


def _check(t: Floats, p: Floats, starts: Floats, ends: Floats, interpolation: str) -> None:
    import numpy as np

    if interpolation not in ("linear", "step"):
        raise ConfigError(f"interpolation must be 'linear' or 'step', not {interpolation!r}")
    if t.ndim != 1 or t.shape != p.shape or t.size == 0:
        raise ConfigError("times and powers must be two non-empty sequences of equal length")
    if t.size > 1 and not bool(np.all(np.diff(t) > 0)):
        raise ConfigError("sample times must be strictly increasing")
    if starts.shape != ends.shape or starts.ndim != 1:
        raise ConfigError("starts and ends must be two sequences of equal length")
    if bool(np.any(ends < starts)):
        raise ConfigError("a request interval ends before it starts")
    finite = np.isfinite
    if not (finite(t).all() and finite(p).all() and finite(starts).all() and finite(ends).all()):
        raise ConfigError("times, powers and intervals must be finite numbers")

"""Forecasts from what greenml already reads: trace files, provider APIs, yearly means.

- :func:`history_forecast`: the seasonal forecaster fitted on a history (a
  trace's values before ``now``) and projected to the deadline; with less
  than 42 days, the zone's packaged typical profile scaled to the history
  (:mod:`greenml.schedule.profile`);
- :func:`trace_forecast`: a trace's own values over the window, taken as known
  (a forecast exported to a file, or a perfect-forecast what-if);
- :func:`provider_forecast`: a provider's forecast (Electricity Maps'
  ``/carbon-intensity/forecast``), which carries no uncertainty;
- :func:`yearly_forecast`: a yearly mean, flat, for spatial choices only;
- :func:`merge_traces`: several files of one location (2022 + 2023) as one.

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Protocol

from greenml.accounting.intensity import ConstantSource, GridIntensity
from greenml.accounting.location import PROVIDERS, live_source
from greenml.accounting.series import StepSeries
from greenml.accounting.traces import TraceSource
from greenml.errors import ConfigError
from greenml.schedule import profile
from greenml.schedule import seasonal as fc
from greenml.schedule.forecast import Forecast

if TYPE_CHECKING:
    import numpy as np

HOUR_S = 3600.0


class ForecastProvider(Protocol):
    """A live source with a forecast call, e.g. ``ElectricityMapsSource``."""

    def forecast(self) -> GridIntensity: ...


def regular_grid(series: StepSeries, what: str) -> tuple[float, float, np.ndarray[Any, Any]]:
    """(first time, step, values) on a regular grid, NaN where the data has holes.

    Raises:
        ConfigError: Times off the grid of the usual step, or a step that does
            not divide a day.
    """
    import numpy as np

    step = series.last_step_s
    if not (math.isfinite(step) and step > 0) or (fc.DAY_S / step) % 1:
        raise ConfigError(f"{what}: a forecaster needs steps that divide a day, not {step:g} s")
    offsets = (series.times_s - series.times_s[0]) / step
    index = np.rint(offsets).astype(np.int64)
    if np.any(np.abs(offsets - index) > 1e-6):
        raise ConfigError(f"{what}: times are not on a regular {step:g}-second grid")
    values = np.full(int(index[-1]) + 1, np.nan)
    values[index] = series.values
    return float(series.times_s[0]), step, values


def history_forecast(
    location: str, history: StepSeries, label: str, now_s: float, until_s: float
) -> Forecast:
    """Fit the seasonal forecaster on the history before ``now_s``; forecast to ``until_s``.

    Args:
        location: Zone or region the history is for.
        history: Past intensities (hourly or finer); values after ``now_s``
            are not used.
        label: Names the history in messages and in the forecast's source.
        now_s: The forecast's origin: only steps that ended by then are known.
        until_s: The forecast reaches at least this time.

    A shorter hourly history (a day or more) of a zone greenml has a typical
    profile of gives that profile scaled to it, with a wide error.

    Raises:
        ConfigError: The history before ``now_s`` is shorter than
            :data:`~greenml.schedule.seasonal.MIN_HISTORY_DAYS` days (and no
            profile of the zone is packaged) or has a
            hole where the forecast reads (the message names the span).
    """
    import numpy as np

    t0, step, values = regular_grid(history, label)
    if step < HOUR_S and HOUR_S % step == 0:
        t0, step, values = _hourly(t0, step, values)
        label += ", hourly means"
    per_day = round(fc.DAY_S / step)
    phase = math.floor((t0 % fc.DAY_S) / step + 1e-9) % per_day
    origin = min(math.floor((now_s - t0) / step + 1e-9), len(values))
    need_s = fc.MIN_HISTORY_DAYS * fc.DAY_S
    if origin < fc.MIN_HISTORY_DAYS * per_day and _can_profile(location, values[: max(origin, 0)]):
        start_s = t0 + origin * step
        found = profile.profile_forecast(location, t0, values[:origin], start_s, until_s, label)
        if now_s - start_s > step:
            late = f"{location}: history ends {_day(start_s)}, {_age(now_s - start_s)} before now"
            found = dataclasses.replace(found, notes=(*found.notes, late))
        return found
    if origin < fc.MIN_HISTORY_DAYS * per_day:
        known_end = t0 + max(origin, 0) * step
        lack = (now_s - need_s, now_s) if origin <= 0 else (known_end - need_s, t0)
        raise ConfigError(
            f"{label} covers {_day(t0, True)} to {_day(t0 + len(values) * step, True)}; the "
            f"seasonal forecaster needs {fc.MIN_HISTORY_DAYS} days of history before now "
            f"({_day(now_s, True)}): no data for {_day(lack[0], True)} to {_day(lack[1], True)}"
            + (
                f" (a day would do for {location}'s typical profile)"
                if profile.has_profile(location)
                else ""
            )
        )
    known = values[:origin]
    model = fc.fit_seasonal(known, per_day, phase)
    start_s = t0 + origin * step
    steps = max(1, math.ceil((until_s - start_s) / step - 1e-9))
    horizons = np.arange(steps)
    point, sigma_log = fc.predict(model, known, [origin], horizons, phase)
    if not np.all(np.isfinite(point)):
        gap = _first_gap(known, t0, step, fc.min_origin(per_day))
        raise ConfigError(
            f"{label} has no data for {gap}, in the {fc.PROFILE_WEEKS} weeks before now "
            "that the forecaster reads"
        )
    times = start_s + step * horizons
    series = StepSeries(times, point[0], step, "g/kWh")
    history_end = t0 + origin * step
    age_s = now_s - history_end
    first, last = _day(t0), _day(history_end - step)
    source = f"seasonal forecaster from {location} history {first} to {last} ({label})"
    notes = []
    if age_s > step:
        notes.append(
            f"{location}: history ends {_day(history_end)}, {_age(age_s)} before now; "
            "the forecaster projects its seasonal profile forward"
        )
    reach = (until_s - history_end) / fc.DAY_S
    if reach > model.reach_days:
        notes.append(
            f"{location}: forecast {reach:.0f} days ahead, beyond the {model.reach_days:g} days "
            "the history can fit; the error there is extrapolated from that horizon"
        )
    how = "forecast errors measured by cross-validation on the history"
    return Forecast(
        location, series, point[0] * sigma_log[0], source, how, model.rho,
        model.near(origin + phase)[1], per_day, history_end, tuple(notes),
    )  # fmt: skip


def _can_profile(location: str, known: Any) -> bool:
    """Whether a short hourly history can scale the zone's packaged typical profile."""
    return (
        len(known) > 0 and profile.has_profile(location)
        and profile.usable_days(known) >= profile.MIN_DAYS
    )  # fmt: skip


def trace_forecast(location: str, trace: TraceSource, start_s: float, end_s: float) -> Forecast:
    """The trace's values over [start_s, end_s], taken as known.

    Raises:
        ConfigError: The trace does not cover the window; the message names
            the missing span.
    """
    grid = trace.intensity(start_s, end_s)
    source = f"{grid.provenance.source}, values taken as known"
    why = "none: the trace's values are taken as exact"
    return Forecast.known(location, grid.series, source, why)


def provider_forecast(location: str, provider: ForecastProvider) -> Forecast:
    """A provider's forecast, labelled; it comes without an uncertainty."""
    grid = provider.forecast()
    why = f"not available: {location}'s provider forecast carries no uncertainty"
    return Forecast(location, grid.series, None, grid.provenance.source, why)


def live_forecast(location: str, provider: str, start_s: float, end_s: float) -> Forecast:
    """The forecast of a live provider (``electricitymaps``, ``watttime``, ``ukci``) for a window.

    Raises:
        ConfigError: An unknown provider, missing credentials, or an API failure.
    """
    if provider not in PROVIDERS or provider == "static":
        live = ", ".join(p for p in PROVIDERS if p != "static")
        raise ConfigError(f"no live forecast provider {provider!r} (known: {live})")
    source: Any = live_source(provider, location)
    grid = source.forecast_span(start_s, end_s)
    why = f"not available: {location}'s provider forecast carries no uncertainty"
    return Forecast(location, grid.series, None, grid.provenance.source, why)


def yearly_forecast(location: str, source: ConstantSource) -> Forecast:
    """A yearly mean, the same every hour: it can choose a place, never a time."""
    grid = source.intensity(0.0, 0.0)
    how = f"unknown: {location} has only a yearly mean, which says nothing about the hour"
    return Forecast(
        location, grid.series, None, f"yearly mean: {grid.provenance.describe()}", how,
        notes=(f"{location}: only a yearly mean is known, so only where, not when, is chosen",),
    )  # fmt: skip


def merge_traces(traces: Sequence[TraceSource]) -> TraceSource:
    """Several traces of one location (say 2022 and 2023) as one, in time order.

    Raises:
        ConfigError: The traces overlap in time or differ in step.
    """
    import numpy as np

    if len(traces) == 1:
        return traces[0]
    ordered = sorted(traces, key=lambda t: t.series.start_s)
    for a, b in itertools.pairwise(ordered):
        if b.series.start_s < a.series.end_s:
            raise ConfigError(f"traces {a.name} and {b.name} overlap in time")
        if a.series.last_step_s != b.series.last_step_s:
            raise ConfigError(f"traces {a.name} and {b.name} have different steps")
    series = StepSeries(
        np.concatenate([t.series.times_s for t in ordered]),
        np.concatenate([t.series.values for t in ordered]),
        ordered[0].series.last_step_s,
        "g/kWh",
    )
    names = " + ".join(t.name for t in ordered)
    first = ordered[0].provenance
    source = first.source.replace(f"({ordered[0].name})", f"({names})")
    if source == first.source:
        source = f"{first.source} + {len(ordered) - 1} more ({names})"
    provenance = type(first)(source, first.location, first.resolution, first.kind, first.scope)
    return TraceSource(series, provenance, names)


def _hourly(t0: float, step: float, values: Any) -> tuple[float, float, Any]:
    """Hourly means of finer values (NaN for an hour with a missing value)."""

    per_hour = round(HOUR_S / step)
    skip = round(((-t0) % HOUR_S) / step) % per_hour  # to the first whole hour
    body = values[skip:]
    body = body[: len(body) // per_hour * per_hour]
    return t0 + skip * step, HOUR_S, body.reshape(-1, per_hour).mean(axis=1)


def _first_gap(values: Any, t0: float, step: float, lookback: int) -> str:
    import numpy as np

    tail = np.flatnonzero(np.isnan(values[-lookback:]))
    at = len(values) - lookback + int(tail[0]) if len(tail) else len(values) - 1
    end = at
    while end < len(values) and np.isnan(values[end]):
        end += 1
    return f"{_day(t0 + at * step, True)} to {_day(t0 + end * step, True)}"


def _day(time_s: float, hours: bool = False) -> str:
    moment = datetime.fromtimestamp(time_s, tz=timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M UTC" if hours else "%Y-%m-%d")


def _age(seconds: float) -> str:
    days = seconds / fc.DAY_S
    if days >= 60:
        return f"{days / 365.25:.1f} years" if days >= 365 else f"{days:.0f} days"
    return f"{days:.1f} days" if days >= 1 else f"{seconds / 3600:.0f} h"

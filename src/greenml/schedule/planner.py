"""plan_job: when and where to run a job, and what that saves against "start now, here".

For every allowed candidate the job is placed in time (the best contiguous
window, or pieces when it may be interrupted) on that location's intensity
forecast, and the best location wins under the objective (carbon, a carbon /
cost blend, or least carbon under a cost cap). The baseline is the job started
at its earliest start in the first candidate, run in one piece. The saving's
interval comes from the forecasts' uncertainty (:mod:`greenml.schedule.saving`).

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from greenml.accounting.cost import PriceSource
from greenml.accounting.intensity import GridIntensity
from greenml.accounting.series import StepSeries
from greenml.errors import ConfigError
from greenml.schedule import sources
from greenml.schedule.forecast import Forecast
from greenml.schedule.job import Job
from greenml.schedule.objective import Objective, cost_cap
from greenml.schedule.placement import Placement, Scales, place
from greenml.schedule.plan import LEVEL, Chunk, Option, Plan
from greenml.schedule.saving import saving_interval
from greenml.schedule.window import TIE_REL, Integral, require_cover

__all__ = ["Chunk", "Option", "Plan", "plan_job"]

History = GridIntensity | StepSeries


def plan_job(
    job: Job,
    candidates: Sequence[str],
    *,
    history_or_forecast: Mapping[str, Forecast | History],
    objective: Objective | None = None,
    now: datetime | None = None,
    allow: Collection[str] | None = None,
    prices: Mapping[str, PriceSource | StepSeries] | None = None,
) -> Plan:
    """Plan a job over candidate locations.

    Args:
        job: What to place.
        candidates: Zones or regions it may run in; the first is "here", the
            baseline's location.
        history_or_forecast: Per location, a :class:`Forecast` (used as it
            is) or a history (a series of past intensities, fitted by the
            seasonal forecaster at ``now``); see :mod:`greenml.schedule.sources`.
        objective: Carbon only by default.
        now: The forecast origin; the wall clock by default.
        allow: Locations allowed to hold the data (the others are not
            considered, except "here" as the baseline).
        prices: Per location, electricity prices (USD/MWh); needed for a cost objective.

    Raises:
        ConfigError: No candidate, none allowed, a location without data,
            data that does not cover the window (naming the span), a start
            in the past, or a cost objective without prices.
    """
    objective = objective or Objective()
    names = [c.strip() for c in candidates if c.strip()]
    if not names:
        raise ConfigError("no candidate location: give at least one zone or region")
    allowed = _allowed(names, allow)
    now = now or datetime.now(timezone.utc)
    if now.tzinfo is None:
        raise ConfigError(f"now {now} has no time zone")
    now_s = now.timestamp()
    if job.earliest_start_s < now_s - 1.0:
        raise ConfigError(f"earliest start {_iso(job.earliest_start)} is before now ({_iso(now)})")
    a, b, d = job.earliest_start_s, job.deadline_s, job.duration_s
    here = names[0]
    needed = list(dict.fromkeys([here, *allowed]))
    forecasts = {n: _forecast(n, history_or_forecast, now_s, b) for n in needed}
    for n, f in forecasts.items():
        require_cover(f.series, a, b, f"{n}: {f.source}")
    price = _prices(needed, prices, objective, a, b)
    scales = _scales(forecasts, price, a, b)
    base_spans = ((a, a + d),)
    base_ci = Integral(forecasts[here].series, a, b).mean([a], [a + d])[0]
    base_pm = Integral(price[here], a, b).mean([a], [a + d])[0] if price else None
    cap = None
    if objective.max_cost_increase is not None and base_pm is not None:
        cap = cost_cap(float(base_pm), objective.max_cost_increase)
    options: list[Option] = []
    best: tuple[str, Placement] | None = None
    for n in allowed:
        found = place(job, forecasts[n].series, price.get(n), objective, scales, cap)
        first = _utc(found.spans_s[0][0]) if found else None
        carbon_mean = found.carbon_mean if found else None
        price_mean = found.price_mean if found else None
        options.append(Option(n, first, carbon_mean, price_mean, forecasts[n].source))
        if found and (best is None or found.score < best[1].score - TIE_REL * abs(best[1].score)):
            best = (n, found)
    if best is None:  # only when "here" is not allowed: the baseline meets its own cap
        raise ConfigError(
            f"no allowed location meets the cost cap ({objective.describe()}, "
            f"the baseline being {here} at the earliest start)"
        )
    where, chosen = best
    mean, base = chosen.carbon_mean, float(base_ci)
    saving = 100.0 * (1.0 - mean / base) if base > 0 else 0.0
    interval = saving_interval(forecasts[where], chosen.spans_s, forecasts[here], base_spans, LEVEL)
    kwh = job.energy_kwh
    base_price = float(base_pm) if base_pm is not None else None
    notes = [note for n in needed for note in forecasts[n].notes]
    if chosen.note:
        notes.append(chosen.note)
    if prices and not price:
        notes.append("prices not given for every location: no cost figures")
    return Plan(
        chunks=tuple(Chunk(_utc(s), _utc(e), where) for s, e in chosen.spans_s),
        expected_g=kwh * mean if kwh is not None else None,
        mean_intensity_g_per_kwh=mean,
        baseline_mean_intensity_g_per_kwh=base,
        saving_pct=saving,
        saving_pct_interval=interval if interval is not None else (saving, saving),
        forecast_source=forecasts[where].source,
        location=where,
        baseline_location=here,
        baseline_forecast_source=forecasts[here].source,
        baseline_start=job.earliest_start,
        baseline_g=kwh * base if kwh is not None else None,
        energy_kwh=kwh,
        mean_price_usd_per_mwh=chosen.price_mean,
        baseline_mean_price_usd_per_mwh=base_price,
        expected_usd=_usd(kwh, chosen.price_mean),
        baseline_usd=_usd(kwh, base_price),
        cost_change_pct=_change(chosen.price_mean, base_price),
        price_source=_price_source(prices, where) if price else None,
        objective=objective.describe(),
        uncertainty=_uncertainty(interval, forecasts[where], forecasts[here]),
        options=tuple(options),
        notes=tuple(dict.fromkeys(notes)),
    )


def _allowed(names: list[str], allow: Collection[str] | None) -> list[str]:
    if allow is None:
        return list(dict.fromkeys(names))
    permitted = {a.strip().upper() for a in allow}
    kept = [n for n in dict.fromkeys(names) if n.upper() in permitted]
    if not kept:
        raise ConfigError(
            f"no candidate is allowed: candidates {', '.join(names)}; "
            f"allowed {', '.join(sorted(allow)) or 'none'}"
        )
    return kept


def _lookup(table: Mapping[str, Any], name: str) -> Any:
    if name in table:
        return table[name]
    return next((v for k, v in table.items() if k.upper() == name.upper()), None)


def _forecast(
    name: str, table: Mapping[str, Forecast | History], now_s: float, until_s: float
) -> Forecast:
    item = _lookup(table, name)
    if isinstance(item, Forecast):
        return item
    if isinstance(item, GridIntensity):
        return sources.history_forecast(name, item.series, item.provenance.source, now_s, until_s)
    if isinstance(item, StepSeries):
        return sources.history_forecast(name, item, f"{name} history", now_s, until_s)
    raise ConfigError(f"no intensity forecast or history for {name}")


def _prices(
    needed: list[str], given: Mapping[str, PriceSource | StepSeries] | None,
    objective: Objective, a: float, b: float,
) -> dict[str, StepSeries]:  # fmt: skip
    given = given or {}
    missing = [n for n in needed if _lookup(given, n) is None]
    if missing and objective.needs_prices:
        raise ConfigError(
            f"the objective ({objective.describe()}) needs electricity prices for "
            f"{', '.join(missing)}: give a price trace for each"
        )
    if missing:
        return {}
    out: dict[str, StepSeries] = {}
    for n in needed:
        item = _lookup(given, n)
        series = item if isinstance(item, StepSeries) else item.prices(a, b)
        require_cover(series, a, b, f"{n}: the price series")
        out[n] = series
    return out


def _scales(forecasts: Mapping[str, Forecast], price: Mapping[str, StepSeries],
            a: float, b: float) -> Scales:  # fmt: skip
    import numpy as np

    carbon = float(np.mean([Integral(f.series, a, b).mean([a], [b])[0]
                            for f in forecasts.values()]))  # fmt: skip
    size = 1.0
    if price:
        absolute = [StepSeries(p.times_s, np.abs(p.values), p.last_step_s, p.unit)
                    for p in price.values()]  # fmt: skip
        size = float(np.mean([Integral(p, a, b).mean([a], [b])[0] for p in absolute]))
    return Scales(carbon if carbon > 0 else 1.0, size if size > 0 else 1.0)


def _uncertainty(
    interval: tuple[float, float] | None, plan: Forecast, base: Forecast
) -> str:
    parts = list(dict.fromkeys([plan.uncertainty, base.uncertainty]))
    if interval is None:
        unknown = [f.uncertainty for f in (plan, base) if f.sigma is None]
        return "no interval; " + "; ".join(dict.fromkeys(unknown))
    if interval[0] == interval[1]:
        return "; ".join(parts)
    return f"{LEVEL * 100:g} % interval, normal errors; " + "; ".join(parts)


def _price_source(prices: Mapping[str, Any] | None, where: str) -> str:
    item = _lookup(prices or {}, where)
    describe = getattr(item, "describe", None)
    return describe() if callable(describe) else str(getattr(item, "source", "price series"))


def _usd(kwh: float | None, usd_per_mwh: float | None) -> float | None:
    return None if kwh is None or usd_per_mwh is None else kwh / 1000.0 * usd_per_mwh


def _change(plan: float | None, base: float | None) -> float | None:
    if plan is None or base is None or base == 0:
        return None
    return 100.0 * (plan - base) / abs(base)


def _utc(time_s: float) -> datetime:
    return datetime.fromtimestamp(time_s, tz=timezone.utc)


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


"""How good a forecaster is: MAPE against naive peers, and the share of savings it keeps.

Rolling origin: at each origin (by default every day at 00:00 and 12:00 of
the test series) the forecaster, persistence (the last value, held) and the
day-ago naive (the latest value at the same time of day) forecast the next
``horizon`` steps from data before the origin only. A fixed job (``job``
steps, contiguous) is then placed in the next ``window`` steps by each
forecast, by the true series (perfect forecast) and at the origin (start
now); the realised saving of each placement is measured on the true series.
"Kept" is the forecaster's total saving ÷ the perfect forecast's. The
coverage is how often the realised saving of the forecaster's placement falls
in the interval the planner would state (:mod:`greenml.schedule.saving`).

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from greenml.accounting.series import StepSeries
from greenml.schedule import seasonal as fc
from greenml.schedule.forecast import Forecast
from greenml.schedule.saving import saving_interval
from greenml.schedule.seasonal import SeasonalModel


@dataclass(frozen=True)
class Skill:
    """Forecast skill on one test series.

    Attributes:
        origins: Number of forecast origins.
        mape_pct: Forecaster MAPE over all horizons; ``persistence_mape_pct``
            and ``day_ago_mape_pct`` the peers'.
        mape_24h_pct: Forecaster MAPE at 24 steps ahead (and the peers').
        perfect_saving_pct: Saving of the perfect placement against start now
            (pooled over origins); ``*_saving_pct`` of each forecast's placement.
        kept_pct: forecaster saving ÷ perfect saving; ``day_ago_kept_pct`` the peer's.
        coverage_pct: Share of origins whose realised saving lies in the stated interval.
    """

    origins: int
    mape_pct: float
    persistence_mape_pct: float
    day_ago_mape_pct: float
    mape_24h_pct: float
    persistence_mape_24h_pct: float
    day_ago_mape_24h_pct: float
    perfect_saving_pct: float
    forecast_saving_pct: float
    persistence_saving_pct: float
    day_ago_saving_pct: float
    kept_pct: float
    day_ago_kept_pct: float
    coverage_pct: float


def naive_forecasts(values: Any, origins: Any, horizons: Any, per_day: int) -> tuple[Any, Any]:
    """(persistence, day-ago naive) forecasts, origins × horizons."""
    import numpy as np

    y = np.asarray(values, dtype=np.float64)
    o = np.asarray(origins)[:, None]
    h = np.asarray(horizons)[None, :]
    persistence = np.broadcast_to(y[o - 1], (o.shape[0], h.shape[1]))
    day_ago = y[o + h - (h // per_day + 1) * per_day]
    return persistence, day_ago


def window_choice(series: Any, job: int) -> Any:
    """First start (index) of least mean over ``job`` steps, per row."""
    import numpy as np

    total = np.cumsum(np.pad(series, ((0, 0), (1, 0))), axis=1)
    means = (total[:, job:] - total[:, :-job]) / job
    low = means.min(axis=1, keepdims=True)
    return np.argmax(means <= low + 1e-9 * np.abs(low), axis=1)


def evaluate(
    model: SeasonalModel,
    values: Any,
    first_test: int,
    *,
    step_s: float = 3600.0,
    job: int = 4,
    window: int = 24,
    horizon: int = 48,
    origins_per_day: tuple[int, ...] = (0, 12),
    level: float = 0.9,
) -> Skill:
    """Skill of ``model`` on ``values[first_test:]``, history before each origin only.

    Args:
        model: A forecaster fitted on other data (another year).
        values: History followed by the test series, on one regular grid.
        first_test: Index of the test series' first value (at 00:00 UTC).
        step_s: The grid step.
        job: Job length in steps; ``window`` the steps it may be placed in.
        horizon: Steps ahead scored for MAPE.
        origins_per_day: Steps after midnight where an origin is made.
        level: Interval level for the coverage.
    """
    import numpy as np

    y = np.asarray(values, dtype=np.float64)
    p = model.per_day
    start = max(first_test, fc.min_origin(p))
    days = np.arange(start - start % p, len(y) - max(horizon, window), p)
    origins = np.sort(np.concatenate([days + k for k in origins_per_day]))
    origins = origins[(origins >= start) & (origins <= len(y) - max(horizon, window))]
    h = np.arange(horizon)
    truth = y[origins[:, None] + h[None, :]]
    ours, sigma_log = fc.predict(model, y, origins, h)
    persistence, day_ago = naive_forecasts(y, origins, h, p)

    def mape(f: Any, col: slice | int = slice(None)) -> float:
        return float(np.mean(np.abs(f[:, col] - truth[:, col]) / truth[:, col]) * 100.0)

    true_w = truth[:, :window]
    total = np.cumsum(np.pad(true_w, ((0, 0), (1, 0))), axis=1)
    true_means = (total[:, job:] - total[:, :-job]) / job
    now = true_means[:, 0]
    rows = np.arange(len(origins))
    picks = {name: window_choice(f[:, :window], job)
             for name, f in (("ours", ours), ("pers", persistence), ("day", day_ago))}  # fmt: skip
    perfect = true_means.min(axis=1)

    def saved(choice: Any) -> float:
        return float((now - true_means[rows, choice]).sum())

    best = float((now - perfect).sum())
    inside = 0
    for i, o in enumerate(origins):
        series = StepSeries(o * step_s + step_s * h[:window], ours[i, :window], step_s, "g/kWh")
        sigma = ours[i, :window] * sigma_log[i, :window]
        near = model.near(int(o))[1]
        forecast = Forecast("-", series, sigma, "-", "-", model.rho, near, p)
        s = picks["ours"][i] * step_s + o * step_s
        stated = saving_interval(
            forecast, [(s, s + job * step_s)], forecast, [(o * step_s, (o + job) * step_s)], level
        )
        real = 100.0 * (1.0 - true_means[i, picks["ours"][i]] / now[i])
        if stated is not None and stated[0] - 1e-9 <= real <= stated[1] + 1e-9:
            inside += 1
    pooled = float(now.sum())
    return Skill(
        origins=len(origins),
        mape_pct=mape(ours),
        persistence_mape_pct=mape(persistence),
        day_ago_mape_pct=mape(day_ago),
        mape_24h_pct=mape(ours, 23),
        persistence_mape_24h_pct=mape(persistence, 23),
        day_ago_mape_24h_pct=mape(day_ago, 23),
        perfect_saving_pct=100.0 * best / pooled,
        forecast_saving_pct=100.0 * saved(picks["ours"]) / pooled,
        persistence_saving_pct=100.0 * saved(picks["pers"]) / pooled,
        day_ago_saving_pct=100.0 * saved(picks["day"]) / pooled,
        kept_pct=100.0 * saved(picks["ours"]) / best if best > 0 else 100.0,
        day_ago_kept_pct=100.0 * saved(picks["day"]) / best if best > 0 else 100.0,
        coverage_pct=100.0 * inside / len(origins),
    )

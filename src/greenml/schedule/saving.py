"""The interval of a plan's saving, propagated from the forecasts' uncertainty.

The saving is S = 1 − P/B, P and B the time-weighted mean forecast intensity
over the plan and over the baseline. Each is a weighted sum of forecast steps,
so to first order S's error is Σ u_t·e_t, e_t the standardised error of step
t and u_t = (∂S/∂f_t)·σ_t. Errors of one forecast are correlated by lag as
the forecaster measured on its residuals (``Forecast.correlation`` by lag,
and ``near_correlation`` in full over the first two days; none given: fully
correlated); forecasts of different locations are taken as
independent. The variance is then Σ_lag ρ(lag)·autocorrelation(u)(lag),
computed by FFT, so a year-long span stays cheap.

The interval is built on the ratio's logarithm, r = ln(P/B), whose error is
Σ u_t·e_t with u_t = (∂r/∂f_t)·σ_t: r ± z·sd (90 % by default) maps back to
S = 1 − e^r, so the saving's interval never reaches 100 % (that would mean
negative emissions) and is skewed as a ratio's error is.

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

from greenml.schedule.forecast import Forecast, correlation_at

if TYPE_CHECKING:
    import numpy as np

Spans = Sequence[tuple[float, float]]


def step_weights(forecast: Forecast, spans: Spans) -> np.ndarray[Any, Any]:
    """Share of the total span time that falls in each step of the forecast."""
    import numpy as np

    s = forecast.series
    starts = s.times_s
    ends = np.append(starts[1:], starts[-1] + s.last_step_s)
    w = np.zeros(len(starts))
    for a, b in spans:
        w += np.clip(np.minimum(ends, b) - np.maximum(starts, a), 0.0, None)
    total = float(w.sum())
    return w / total if total > 0 else w


def mean_of(forecast: Forecast, spans: Spans) -> float:
    """Time-weighted mean of the point forecast over the spans."""
    import numpy as np

    return float(np.dot(step_weights(forecast, spans), forecast.series.values))


def _variance(u: Any, forecast: Forecast) -> float:
    """Σ_ts u_t u_s R_ts over the forecast's steps (R: the errors' correlation)."""
    import numpy as np

    nz = np.flatnonzero(u)
    if len(nz) == 0:
        return 0.0
    if forecast.correlation is None:
        return float(u.sum() ** 2)
    inner = np.asarray(u[nz[0] : nz[-1] + 1], dtype=np.float64)
    n = len(inner)
    size = 1 << (2 * n - 1).bit_length()
    spectrum = np.fft.rfft(inner, size)
    acf = np.fft.irfft(spectrum * np.conj(spectrum), size)[:n]
    rho = correlation_at(forecast.correlation, n, forecast.per_day)
    var = float(acf[0] + 2.0 * np.dot(rho[1:], acf[1:]))
    near = forecast.near_correlation
    if near is not None and nz[0] < len(near):
        k = min(len(near), len(u))
        head = np.asarray(u[:k], dtype=np.float64)
        lags = np.abs(np.subtract.outer(np.arange(k), np.arange(k)))
        stationary = correlation_at(forecast.correlation, k, forecast.per_day)[lags]
        var += float(head @ (near[:k, :k] - stationary) @ head)
    return max(var, 0.0)


def sigma_of_mean(forecast: Forecast, spans: Spans) -> float | None:
    """1σ of the mean forecast over the spans (``None`` when the source gives no σ)."""
    if forecast.sigma is None:
        return None
    u = step_weights(forecast, spans) * forecast.sigma
    return math.sqrt(_variance(u, forecast))


def saving_interval(
    plan: Forecast, plan_spans: Spans, base: Forecast, base_spans: Spans, level: float = 0.9
) -> tuple[float, float] | None:
    """(low, high) of the saving 1 − P/B in percent (high < 100), ``None`` when a σ is unknown."""
    if plan.sigma is None or base.sigma is None:
        return None
    wp = step_weights(plan, plan_spans)
    wb = step_weights(base, base_spans)
    p = float(wp @ plan.series.values)
    b = float(wb @ base.series.values)
    if b <= 0 or p <= 0:
        return None
    ratio = math.log(p / b)
    dp = wp / p * plan.sigma  # ∂ln(P/B)/∂f on the plan's steps × σ
    db = -wb / b * base.sigma
    same = plan is base
    var = _variance(dp + db, plan) if same else _variance(dp, plan) + _variance(db, base)
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    half = z * math.sqrt(var)
    low, high = -math.expm1(ratio + half), -math.expm1(ratio - half)
    return 100.0 * low + 0.0, 100.0 * high + 0.0  # + 0.0: never -0.0

"""The seasonal forecaster: a daily/weekly profile blended with decaying persistence.

It works on log intensity z (values floored at 1 g/kWh) on the history's
regular grid (P steps a day). For an origin o (the first step not yet known)
and a horizon h it starts from the hour-of-day profile S_d — the mean of the
last 7 same-time-of-day values before o — and adds a linear blend, fitted per
horizon by least squares on the history itself::

    z(o+h) ≈ S_d + b1·A + b2·(S_w − S_d) + b3·(Y − S_d) + b4·L + b5

A is the latest value's departure from its own profile (persistence, whose
weight the fit lets decay with h), S_w the hour-of-week profile of the last 4
weeks, Y the latest same-time-of-day value (the day-ago naive), L the last
day's level against the week before. Horizons 0–2 days get one fit each;
longer ones share fits at 3, 5, 7, 14, 30, 60, 90, 180 and 365 days ahead,
where the history is long enough to fit them. Nothing after the origin is
read: every feature looks back from o.

Errors come from a blocked cross-validation on the history (each quarter
predicted by weights fitted on the rest): for the first two days, their full
covariance across horizons, per hour of day of the origin (errors are larger
and differently linked at some hours); beyond, a spread per fitted horizon
and a correlation by lag. The planner turns these into a saving's interval.

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

DAY_S = 86400.0
PROFILE_DAYS = 7
PROFILE_WEEKS = 4
FIT_DAYS = 2  # one fit per step for the first two days
FAR_DAYS = (3, 5, 7, 14, 30, 60, 90, 180, 365)
MIN_HISTORY_DAYS = 42
FLOOR = 1.0  # g/kWh: log of values floored here
_LOOKBACK_DAYS = 7 * PROFILE_WEEKS + 1  # the oldest value a feature reads
_MIN_SAMPLES_DAYS = 7  # a fit needs a week of origins
_MAX_ORIGINS = 12_000
_FOLDS = 4
_GROUPS = 24  # origin hours of day with their own error covariance


@dataclass(frozen=True)
class SeasonalModel:
    """Fitted blend weights and errors of the seasonal forecaster.

    Attributes:
        per_day: Steps per day (24 for hourly data).
        horizons: The horizon (steps ahead) each fit starts at, increasing.
        coefs: One row of five weights per fitted horizon.
        sigma_log: Spread of log errors per fitted horizon (all origins).
        rho: Correlation of one forecast's errors by lag in steps (0 … 2 days).
        near_cov: Covariance of log errors over the first two days of
            horizons, per origin hour of day (``groups`` × 2P × 2P).
    """

    per_day: int
    horizons: np.ndarray[Any, Any]
    coefs: np.ndarray[Any, Any]
    sigma_log: np.ndarray[Any, Any]
    rho: np.ndarray[Any, Any]
    near_cov: np.ndarray[Any, Any]

    @property
    def reach_days(self) -> float:
        """How far ahead the fitted horizons reach, in days."""
        return float(self.horizons[-1]) / self.per_day

    def group(self, phase: Any) -> Any:
        """Covariance group of origins ``phase`` steps after midnight UTC."""
        groups = len(self.near_cov)
        return (phase % self.per_day) * groups // self.per_day

    def near(self, phase: int) -> tuple[Any, Any]:
        """(σ of log errors, correlation matrix) over the first two days from an origin."""
        import numpy as np

        cov = self.near_cov[self.group(phase)]
        sigma = np.sqrt(np.clip(np.diag(cov), 1e-12, None))
        return sigma, np.clip(cov / np.outer(sigma, sigma), -1.0, 1.0)


def log_values(values: Any) -> np.ndarray[Any, Any]:
    """log of values floored at :data:`FLOOR` (NaN stays NaN)."""
    import numpy as np

    return np.log(np.maximum(np.asarray(values, dtype=np.float64), FLOOR))  # type: ignore[no-any-return]


def min_origin(per_day: int) -> int:
    """The first origin whose features all lie inside the data."""
    return _LOOKBACK_DAYS * per_day + 1


def features(z: Any, origins: Any, horizons: Any, per_day: int) -> tuple[Any, Any]:
    """(S_d, X) for each origin × horizon: the profile and the five blend inputs."""
    import numpy as np

    p = per_day
    o = np.asarray(origins)[:, None]
    h = np.asarray(horizons)[None, :]
    j = o + h
    m = h // p + 1
    n = h // (7 * p) + 1
    day = np.mean([z[j - (m + i) * p] for i in range(PROFILE_DAYS)], axis=0)
    week = np.mean([z[j - (n + i) * 7 * p] for i in range(PROFILE_WEEKS)], axis=0)
    latest_same = z[j - m * p]
    last = z[o - 1]
    last_profile = np.mean([z[o - 1 - (i + 1) * p] for i in range(PROFILE_DAYS)], axis=0)
    total = np.concatenate(([0.0], np.cumsum(np.nan_to_num(z))))
    bad = np.concatenate(([0], np.cumsum(np.isnan(z))))
    recent = (total[o] - total[o - p]) / p
    before = (total[o - p] - total[o - (PROFILE_DAYS + 1) * p]) / (PROFILE_DAYS * p)
    level = np.where(bad[o] - bad[o - (PROFILE_DAYS + 1) * p] > 0, np.nan, recent - before)
    shape = j.shape
    x = np.stack(
        [np.broadcast_to(last - last_profile, shape), week - day, latest_same - day,
         np.broadcast_to(level, shape), np.ones(shape)],
        axis=-1,
    )  # fmt: skip
    return day, x


def fit_seasonal(values: Any, per_day: int, phase: int = 0) -> SeasonalModel:
    """Fit the blend on a regular series (NaN for gaps), from its own past only.

    Args:
        values: The history on a regular grid.
        per_day: Steps a day.
        phase: Steps from midnight UTC to the first value.

    Raises:
        ConfigError: Fewer than :data:`MIN_HISTORY_DAYS` days of values, or too many gaps.
    """
    import numpy as np

    z = log_values(values)
    first = min_origin(per_day)
    if len(z) < MIN_HISTORY_DAYS * per_day:
        raise ConfigError(
            f"the seasonal forecaster needs {MIN_HISTORY_DAYS} days of history, "
            f"got {len(z) / per_day:.1f}"
        )
    least = _MIN_SAMPLES_DAYS * per_day
    near = np.arange(FIT_DAYS * per_day)
    origins = _origins(first, len(z) - len(near) + 1)
    day, x = features(z, origins, near, per_day)
    target = z[origins[:, None] + near[None, :]] - day
    coefs, sigmas, residuals = _fit_columns(x, target, least)
    if len(coefs) < len(near):
        raise ConfigError("the history has too many gaps to fit the forecaster")
    horizons: list[int] = [int(h) for h in near]
    for h in (d * per_day for d in FAR_DAYS):
        far = _origins(first, len(z) - h)
        if len(far) < least:
            break
        day, x = features(z, far, [h], per_day)
        found = _fit_columns(x, z[far + h][:, None] - day, least)
        if not found[0]:
            break
        coefs += found[0]
        sigmas += found[1]
        horizons.append(h)
    groups = min(_GROUPS, per_day)
    which = ((origins + phase) % per_day) * groups // per_day
    return SeasonalModel(
        per_day, np.array(horizons), np.array(coefs), np.maximum(np.array(sigmas), 1e-6),
        _correlation(residuals), _covariances(residuals, which, groups),
    )  # fmt: skip


def predict(
    model: SeasonalModel, values: Any, origins: Any, horizons: Any, phase: int = 0
) -> tuple[Any, Any]:
    """Point forecasts (in the series' unit) and σ of log errors, origins × horizons."""
    import numpy as np

    h = np.asarray(horizons)
    o = np.asarray(origins)
    day, x = features(log_values(values), o, h, model.per_day)
    k = _bucket(model, h)
    mu = day + np.einsum("nhk,hk->nh", x, model.coefs[k])
    sigma = np.repeat(model.sigma_log[k][None, :], len(o), axis=0)
    close = h < model.near_cov.shape[1]
    if close.any():
        cov = model.near_cov[model.group(o + phase)]  # origins × 2P × 2P
        diag = np.sqrt(np.clip(np.diagonal(cov, axis1=1, axis2=2), 1e-12, None))
        sigma[:, close] = diag[:, h[close]]
    return np.exp(mu), sigma


def _bucket(model: SeasonalModel, h: Any) -> Any:
    import numpy as np

    return np.searchsorted(model.horizons, h, side="right") - 1


def _origins(first: int, stop: int) -> Any:
    import numpy as np

    origins = np.arange(first, max(first, stop))
    return origins[:: max(1, len(origins) // _MAX_ORIGINS)]


def _fit_columns(x: Any, target: Any, least: int) -> tuple[list[Any], list[float], Any]:
    """Least squares per horizon column, and its held-out residuals (blocked folds).

    Normal equations for all columns at once, with a whisker of ridge for
    near-collinear inputs; each fold's weights are the full sums minus the
    fold's own. Stops at the first column with too few rows.
    """
    import numpy as np

    ok = np.isfinite(target) & np.all(np.isfinite(x), axis=2)
    counts = ok.sum(axis=0)
    usable = int(np.argmax(counts < least)) if (counts < least).any() else len(counts)
    x, target, ok = x[:, :usable], target[:, :usable], ok[:, :usable]
    xm = np.where(ok[:, :, None], x, 0.0)
    ym = np.where(ok, target, 0.0)
    fold = np.arange(len(target)) * _FOLDS // max(len(target), 1)
    grams = np.stack([np.einsum("nki,nkj->kij", xm[fold == f], xm[fold == f])
                      for f in range(_FOLDS)])  # fmt: skip
    sums = np.stack([np.einsum("nki,nk->ki", xm[fold == f], ym[fold == f])
                     for f in range(_FOLDS)])  # fmt: skip
    coefs = _solve(grams.sum(axis=0), sums.sum(axis=0))
    residuals = np.full(target.shape, np.nan)
    for f in range(_FOLDS):
        rows = fold == f
        held = _solve(grams.sum(axis=0) - grams[f], sums.sum(axis=0) - sums[f])
        fitted = np.einsum("nki,ki->nk", x[rows], held)
        residuals[rows] = np.where(ok[rows], target[rows] - fitted, np.nan)
    sigmas = np.sqrt(np.nanmean(residuals**2, axis=0)) if usable else np.zeros(0)
    return list(coefs), [float(v) for v in sigmas], residuals


def _solve(gram: Any, rhs: Any) -> Any:
    import numpy as np

    ridge = 1e-9 * np.trace(gram, axis1=1, axis2=2)[:, None, None] * np.eye(gram.shape[-1])
    return np.linalg.solve(gram + ridge, rhs[..., None])[..., 0]


def _correlation(residuals: Any) -> Any:
    """Correlation of one forecast's errors by lag (steps), averaged over horizons."""
    import numpy as np

    complete = residuals[np.all(np.isfinite(residuals), axis=1)]
    m = _second_moment(complete)
    scale = np.sqrt(np.clip(np.diag(m), 1e-12, None))
    corr = m / np.outer(scale, scale)
    n = len(corr)
    rho = np.array([1.0] + [float(np.mean(np.diagonal(corr, lag))) for lag in range(1, n)])
    return np.clip(np.nan_to_num(rho), 0.0, 1.0)


def _covariances(residuals: Any, which: Any, groups: int) -> Any:
    """Error covariance across horizons per origin group (pooled where a group is thin)."""
    import numpy as np

    complete = np.all(np.isfinite(residuals), axis=1)
    pooled = _second_moment(residuals[complete])
    out = np.empty((groups, *pooled.shape))
    for g in range(groups):
        rows = residuals[complete & (which == g)]
        out[g] = _second_moment(rows) if len(rows) > 2 * residuals.shape[1] else pooled
    return out


def _second_moment(rows: Any) -> Any:
    """E[r rᵀ]: the error's covariance including any bias."""

    return rows.T @ rows / max(len(rows), 1)  # type: ignore[no-any-return]

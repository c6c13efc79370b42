"""Forecast skill of greenml's seasonal forecaster on 16 grid zones, against its peers.

For every zone in ``shared/data/carbon_intensity``: fit each forecaster on
one year, then forecast the other with a rolling origin (each day at 00:00
and 12:00 UTC, the next 72 h, from data before the origin only) and print,
per direction, one table: rows are methods, columns the MAPE at 1, 24 and
72 h ahead, the saving a planner achieves with that forecast (a 4 h job
placed in the next 24 h by the forecast, emissions measured on the true
series, against starting at the origin) and the share of zones where
greenml's achieved saving beats that method's.

Methods: greenml's seasonal forecaster; Holt-Winters (statsmodels
ExponentialSmoothing, additive damped trend, daily season); MSTL (statsmodels,
daily + weekly seasons, trailing window); gradient-boosted trees (sklearn
HistGradientBoostingRegressor on calendar and lag features, every lag read
before the origin); the day-ago naive; persistence.

Both splits run: train 2022 → test 2023, and train 2023 → test 2022. statsmodels
is a benchmark-only dependency (``make bench`` installs it). A report: exit code 0.

Usage::

    python benchmarks/forecast_skill.py [--quick] [--data DIR] [--zones DE-LU,GB]
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "carbon_intensity"
PER_DAY = 24
WEEK = 7 * PER_DAY


def _log(values: Any) -> Any:
    return np.log(np.maximum(np.asarray(values, dtype=np.float64), 1.0))


def holt_winters(train: Any, y: Any, origins: Any, horizons: Any) -> Any:
    """Additive damped-trend Holt-Winters, daily season (statsmodels fit on ``train``).

    statsmodels' ``ExponentialSmoothing`` estimates the smoothing weights and
    the damping on the training year; the same recursion then runs through
    ``y`` (causal: the state at o−1 has read values up to o−1 only).
    """
    from statsmodels.tsa.holtwinters import ExponentialSmoothing

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = ExponentialSmoothing(
            _log(train), trend="add", damped_trend=True, seasonal="add",
            seasonal_periods=PER_DAY,
        ).fit()  # fmt: skip
    p = fit.params
    names = ("smoothing_level", "smoothing_trend", "smoothing_seasonal", "damping_trend")
    a, b, g, phi = (float(p[k]) for k in names)
    z = _log(y)
    n, m = len(z), PER_DAY
    level, trend = np.empty(n), np.empty(n)
    season = np.empty(n + m)
    season[:m] = p["initial_seasons"]
    lv, tr = float(p["initial_level"]), float(p["initial_trend"])
    for i in range(n):
        s = season[i]
        new = a * (z[i] - s) + (1 - a) * (lv + phi * tr)
        season[i + m] = g * (z[i] - lv - phi * tr) + (1 - g) * s
        tr = b * (new - lv) + (1 - b) * phi * tr
        lv = new
        level[i], trend[i] = lv, tr
    o = np.asarray(origins)[:, None]
    h = np.asarray(horizons)[None, :]
    damp = np.cumsum(phi ** (np.asarray(horizons) + 1))[None, :]
    seas = season[o + m + h - m * ((h + m) // m)]
    return np.exp(level[o - 1] + damp * trend[o - 1] + seas)


def mstl(y: Any, origins: Any, horizons: Any, refit_days: int = 14, window_weeks: int = 4) -> Any:
    """MSTL (statsmodels, daily + weekly seasons) on a trailing window, seasonal-naive projected.

    Every ``refit_days`` the series of the last ``window_weeks`` weeks before
    the origin is decomposed; each seasonal component's last cycle is
    repeated forward, and the deseasonalised level is the mean of the last
    3 h of (value − projected seasons), so origins between refits still read
    their latest values. Refitting at every origin would cost ~0.1 s each.
    """
    from statsmodels.tsa.seasonal import MSTL

    z = _log(y)
    h = np.asarray(horizons)
    out = np.empty((len(origins), len(h)))
    fit_at, daily, weekly = -1, np.zeros(PER_DAY), np.zeros(WEEK)
    span = window_weeks * WEEK
    for i, o in enumerate(origins):
        if fit_at < 0 or o - fit_at >= refit_days * PER_DAY:
            fit_at = int(o)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = MSTL(z[max(0, o - span) : o], periods=(PER_DAY, WEEK)).fit()
            daily = res.seasonal[-PER_DAY:, 0]
            weekly = res.seasonal[-WEEK:, 1]
        recent = np.arange(o - 3, o) - fit_at  # steps after the fit's end (may be negative)
        level = float(np.mean(z[recent + fit_at] - daily[recent % PER_DAY] - weekly[recent % WEEK]))
        ahead = o + h - fit_at
        out[i] = np.exp(level + daily[ahead % PER_DAY] + weekly[ahead % WEEK])
    return out


def _gbt_features(z: Any, hour: Any, weekday: Any, origins: Any, horizons: Any) -> tuple[Any, Any]:
    """Features for origin o, target o+h, reading z before o only; and each row's base."""
    o = np.asarray(origins)[:, None]
    h = np.asarray(horizons)[None, :]
    o, h = np.broadcast_arrays(o, h)
    t = o + h
    cs = np.concatenate(([0.0], np.cumsum(z)))
    base = (cs[o] - cs[o - PER_DAY]) / PER_DAY
    week_mean = (cs[o] - cs[o - WEEK]) / WEEK
    day_ago = z[t - PER_DAY * ((h + PER_DAY) // PER_DAY)]
    week_ago = z[t - WEEK * ((h + WEEK) // WEEK)]
    same_hour = np.mean([z[t - PER_DAY * ((h + PER_DAY) // PER_DAY + k)] for k in range(7)], axis=0)
    last_usual = np.mean([z[o - 1 - PER_DAY * (k + 1)] for k in range(7)], axis=0)
    x = np.stack(
        [h, hour[t % len(hour)], weekday[t % len(weekday)], z[o - 1] - base, day_ago - base,
         week_ago - base, same_hour - base, base - week_mean, z[o - 1] - last_usual],
        axis=-1,
    ).reshape(-1, 9)  # fmt: skip
    return x, base.reshape(-1)


def gradient_boosting(
    train: Any, train_times_s: Any, y: Any, times_s: Any, origins: Any, horizons: Any
) -> Any:
    """sklearn HistGradientBoostingRegressor on calendar and lag features, one model for all h.

    Features: horizon, hour of day and weekday (UTC) of the target, and lags
    all read before the origin (so every lag is ≥ the horizon): the last
    value and its departure from its own hour's 7-day mean, the value a day
    and a week before at the target's hour, the 7-day mean at that hour, the
    last day's level against the week's; all
    relative to the last day's mean, which is also the target's reference.
    Trained on origins every 18 h of the training year (all hours of day in turn).
    """
    from sklearn.ensemble import HistGradientBoostingRegressor

    def calendar(times: Any) -> tuple[Any, Any]:
        t = np.asarray(times, dtype=np.int64)
        return (t // 3600) % 24, ((t // 86400) + 3) % 7  # 1970-01-01 was a Thursday

    zt = _log(train)
    h = np.asarray(horizons)
    first = WEEK + 8 * PER_DAY
    train_origins = np.arange(first, len(zt) - len(h), 18)
    x, base = _gbt_features(zt, *calendar(train_times_s), train_origins, h)
    target = zt[(train_origins[:, None] + h[None, :]).reshape(-1)] - base
    model = HistGradientBoostingRegressor(max_iter=150, learning_rate=0.15, random_state=0)
    model.fit(x, target)
    z = _log(y)
    xt, bt = _gbt_features(z, *calendar(times_s), origins, h)
    return np.exp(model.predict(xt) + bt).reshape(len(origins), len(h))


MAPE_AT = (1, 24, 72)  # hours ahead
HORIZON = 72
JOB, WINDOW = 4, 24
METHODS = ("greenml", "Holt-Winters", "MSTL", "GBT", "day-ago", "persistence")
QUICK_ZONES = ("DE-LU", "GB", "US-CAL-CISO")
SECONDS: dict[str, float] = {}  # fit + forecast time per method, all zones


def load(path: Path) -> tuple[Any, Any]:
    from greenml.accounting.traces import load_trace

    series = load_trace(path).series
    return series.values, series.times_s


def origins_of(first_test: int, n: int) -> Any:
    """Every day at 00:00 and 12:00 UTC of the test span, with enough past and future."""
    from greenml.schedule.seasonal import min_origin

    start = max(first_test, min_origin(PER_DAY))
    start += (-start) % (PER_DAY // 2)
    return np.arange(start, n - max(HORIZON, WINDOW) + 1, PER_DAY // 2)


def score(train: Any, train_t: Any, y: Any, t: Any, first_test: int) -> dict[str, dict[str, float]]:
    """MAPE at 1/24/72 h and achieved saving of each method on ``y[first_test:]``."""
    from greenml.schedule import seasonal as fc
    from greenml.schedule.forecast_skill import naive_forecasts, window_choice

    origins = origins_of(first_test, len(y))
    h = np.arange(HORIZON)
    truth = y[origins[:, None] + h[None, :]]
    persistence, day_ago = naive_forecasts(y, origins, h, PER_DAY)
    makers = {
        "greenml": lambda: fc.predict(fc.fit_seasonal(train, PER_DAY), y, origins, h)[0],
        "Holt-Winters": lambda: holt_winters(train, y, origins, h),
        "MSTL": lambda: mstl(y, origins, h),
        "GBT": lambda: gradient_boosting(train, train_t, y, t, origins, h),
        "day-ago": lambda: day_ago,
        "persistence": lambda: persistence,
    }
    forecasts = {}
    for name, make in makers.items():
        clock = time.perf_counter()
        forecasts[name] = make()
        SECONDS[name] = SECONDS.get(name, 0.0) + time.perf_counter() - clock
    total = np.cumsum(np.pad(truth[:, :WINDOW], ((0, 0), (1, 0))), axis=1)
    true_means = (total[:, JOB:] - total[:, :-JOB]) / JOB
    now = true_means[:, 0]
    rows = np.arange(len(origins))
    out: dict[str, dict[str, float]] = {}
    for name, f in forecasts.items():
        pick = window_choice(f[:, :WINDOW], JOB)
        err = np.abs(f - truth) / truth * 100.0
        out[name] = {f"mape{k}": float(err[:, k - 1].mean()) for k in MAPE_AT}
        out[name]["saving"] = float(100.0 * (now - true_means[rows, pick]).sum() / now.sum())
    out["perfect"] = {"saving": float(100.0 * (now - true_means.min(axis=1)).sum() / now.sum())}
    return out


def table(split: str, results: dict[str, dict[str, dict[str, float]]]) -> None:
    zones = list(results)
    perfect = np.mean([results[z]["perfect"]["saving"] for z in zones])
    print(f"\n{split}: {len(zones)} zones; MAPE median of zones, saving mean of zones; "
          f"perfect-forecast saving {perfect:.1f}%")  # fmt: skip
    print(f"{'method':<13} {'MAPE@1h':>8} {'@24h':>6} {'@72h':>6} │ {'saving':>7} {'kept':>5} │ "
          f"{'greenml better':>14}")  # fmt: skip
    for m in METHODS:
        # MAPE: median of zones (one diverging zone would swamp a mean); saving: mean of zones
        mean = {k: float((np.mean if k == "saving" else np.median)(
                    [results[z][m][k] for z in zones])) for k in results[zones[0]][m]}  # fmt: skip
        wins = sum(results[z]["greenml"]["saving"] > results[z][m]["saving"] for z in zones)
        versus = "—" if m == "greenml" else f"{wins}/{len(zones)}"
        kept = 100 * mean["saving"] / perfect
        print(f"{m:<13} {mean['mape1']:7.1f}% {mean['mape24']:5.1f}% {mean['mape72']:5.1f}% │ "
              f"{mean['saving']:6.2f}% {kept:4.0f}% │ {versus:>14}")  # fmt: skip
    losses = {m: [z for z in zones if results[z][m]["saving"] > results[z]["greenml"]["saving"]]
              for m in METHODS[1:]}  # fmt: skip
    for m, lost in losses.items():
        if lost:
            print(f"  {m} saves more than greenml in: {', '.join(lost)}")
    for m in METHODS:
        wild = [z for z in zones if results[z][m]["mape72"] > 100.0]
        if wild:
            print(f"  {m} diverges (MAPE@72h > 100 %) in: {', '.join(wild)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--zones", help="comma-separated zones (default: all in --data)")
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK_ZONES)}")
    args = parser.parse_args()

    clock = time.perf_counter()
    zones = sorted({p.name.rsplit("_", 2)[0] for p in args.data.glob("*_20??_hourly.csv")})
    wanted = args.zones.split(",") if args.zones else QUICK_ZONES if args.quick else None
    if wanted:
        zones = [z for z in zones if z in wanted]
    print("Forecast skill, rolling origin at 00:00 and 12:00 UTC, horizons 1–72 h; every method")
    print("fitted on one year, forecasting the other from data before each origin only.")
    print(f"saving: a {JOB} h job placed by each forecast in the next {WINDOW} h, emissions on the")
    print("truth, vs starting at the origin (pooled over origins); kept: share of the perfect")
    print("forecast's saving; greenml better: zones where greenml's saving beats that method's.")
    results: dict[str, dict[str, Any]] = {"2022→2023": {}, "2023→2022": {}}
    for zone in zones:
        a, ta = load(args.data / f"{zone}_2022_hourly.csv")
        b, tb = load(args.data / f"{zone}_2023_hourly.csv")
        results["2022→2023"][zone] = score(a, ta, np.concatenate([a, b]),
                                           np.concatenate([ta, tb]), len(a))  # fmt: skip
        results["2023→2022"][zone] = score(b, tb, a, ta, 0)
        spent = ", ".join(f"{k} {v:.0f} s" for k, v in SECONDS.items() if v >= 0.5)
        print(f"  {zone} done ({time.perf_counter() - clock:.0f} s; so far {spent})", flush=True)
    for split, by_zone in results.items():
        table(split, by_zone)
    print(f"\n{len(zones)} zones, both splits, in {time.perf_counter() - clock:.1f} s")


if __name__ == "__main__":
    main()

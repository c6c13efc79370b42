"""A forecast from little history: the zone's typical day, scaled to the last days' level.

With less history than the seasonal forecaster needs
(:data:`~greenml.schedule.seasonal.MIN_HISTORY_DAYS`), the planner still
plans when greenml ships a typical profile of the zone
(``data/intensity_profiles.csv``: Electricity Maps' 2023 hourly values
averaged by hour of day, UTC, on weekdays and on weekends). The profile is
scaled by the geometric mean ratio of the last (up to 7) days of history to
the profile at the same hours, and its error is wide on purpose: the spread
of the history's own departures from the scaled profile, inflated and never
below :data:`SIGMA_LOG_FLOOR`, with errors linked only over a few hours.

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import csv
import functools
import math
from typing import Any

from greenml.accounting.series import StepSeries
from greenml.data import packaged
from greenml.schedule.forecast import Forecast

DAY_S = 86400.0
HOUR_S = 3600.0
PROFILE_YEAR = 2023
MIN_DAYS = 1  # the least history the profile is scaled to
SCALE_DAYS = 7  # the most recent days the level is taken from
SIGMA_LOG_FLOOR = 0.1  # even a flat history says little about a given day
SIGMA_INFLATION = 1.5  # out-of-sample ÷ in-sample error: 0.9–1.3 on 16 zones, 2022
CORRELATION_HOURS = 3.0  # errors linked by e^(−lag / 3 h)


@functools.cache
def _profiles() -> dict[str, Any]:
    """Zone (and alias), upper case → (zone id, 2 × 24 array: weekday, weekend)."""
    import numpy as np

    data = packaged()
    table: dict[str, Any] = {}
    for row in csv.DictReader(
        (data / "intensity_profiles.csv").read_text(encoding="utf-8").splitlines()
    ):
        zone = row["zone"]
        if zone not in table:
            table[zone] = (zone, np.full((2, 24), np.nan))
        kind = 1 if row["day_type"] == "weekend" else 0
        table[zone][1][kind, int(row["hour_utc"])] = float(row["lifecycle_g_per_kwh"])
    zones = (data / "intensity_zones.csv").read_text(encoding="utf-8").splitlines()
    aliases = {r["alias"]: r["zone"] for r in csv.DictReader(zones) if r["alias"]}
    out = {k.upper(): v for k, v in table.items()}
    out.update({a.upper(): table[z] for a, z in aliases.items() if z in table})
    return out


def has_profile(location: str) -> bool:
    """Whether greenml ships a typical profile for this zone."""
    return location.strip().upper() in _profiles()


def profile_values(location: str, times_s: Any) -> Any:
    """The zone's typical intensity at each (hourly) time, g/kWh."""
    import numpy as np

    table = _profiles()[location.strip().upper()][1]
    t = np.asarray(times_s, dtype=np.float64)
    hour = (np.floor(t / HOUR_S) % 24).astype(np.int64)
    weekend = ((np.floor(t / DAY_S) + 3) % 7 >= 5).astype(np.int64)  # 1970-01-01: Thursday
    return table[weekend, hour]


def usable_days(values: Any) -> float:
    """Days of known (non-NaN) values in the last :data:`SCALE_DAYS` days of an hourly history."""
    import numpy as np

    return float(np.isfinite(values[-SCALE_DAYS * 24 :]).sum()) / 24.0


def profile_forecast(
    location: str, t0: float, values: Any, start_s: float, until_s: float, label: str
) -> Forecast:
    """The scaled typical profile from ``start_s`` to ``until_s`` (hourly ``values`` from ``t0``).

    Args:
        location: A zone with a profile (:func:`has_profile`).
        t0: Time of the first value.
        values: Hourly history before the forecast, NaN where unknown; the
            last :data:`SCALE_DAYS` days set the level.
        start_s: First step of the forecast (the end of the history).
        until_s: The forecast reaches at least this time.
        label: Names the history in the forecast's source.
    """
    import numpy as np

    recent = np.asarray(values, dtype=np.float64)[-SCALE_DAYS * 24 :]
    times = t0 + HOUR_S * (len(values) - len(recent) + np.arange(len(recent)))
    known = np.isfinite(recent)
    typical = profile_values(location, times[known])
    departures = np.log(np.maximum(recent[known], 1.0)) - np.log(typical)
    scale = float(np.mean(departures))
    spread = float(np.sqrt(np.mean((departures - scale) ** 2)))
    sigma_log = max(SIGMA_LOG_FLOOR, SIGMA_INFLATION * spread)
    steps = max(1, math.ceil((until_s - start_s) / HOUR_S - 1e-9))
    ahead = start_s + HOUR_S * np.arange(steps)
    point = profile_values(location, ahead) * math.exp(scale)
    zone = _profiles()[location.strip().upper()][0]
    days = usable_days(values)
    span = f"{days:.0f}" if days == round(days) else f"{days:.1f}"
    source = (
        f"typical profile of {zone} ({PROFILE_YEAR} hourly means, Electricity Maps), "
        f"scaled to the last {span} days of {label}"
    )
    how = (
        f"wide on purpose: the history's departures from the scaled profile ×{SIGMA_INFLATION:g}, "
        f"at least ±{SIGMA_LOG_FLOOR:g} in log"
    )
    lags = np.arange(48)
    note = (
        f"{location}: only {span} days of history, fewer than the seasonal forecaster's "
        f"42; planned on {zone}'s typical day instead"
    )
    return Forecast(
        location, StepSeries(ahead, point, HOUR_S, "g/kWh"), point * sigma_log, source, how,
        np.exp(-lags / CORRELATION_HOURS), None, 24, start_s, (note,),
    )  # fmt: skip

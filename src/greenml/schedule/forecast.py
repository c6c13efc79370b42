"""An intensity forecast, whoever made it: values, their uncertainty and where they came from.

Forecasts come from a provider (Electricity Maps' forecast), from a file taken
as known, or from the seasonal forecaster fitted on history
(:mod:`greenml.schedule.seasonal`); :mod:`greenml.schedule.sources` builds
them. Each step's 1σ error and how errors are linked across steps let the
planner state the interval of a saving (:mod:`greenml.schedule.saving`).

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from greenml.accounting.series import StepSeries

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Forecast:
    """Expected intensity of one location over time, with its uncertainty.

    Attributes:
        location: The zone or region it is for.
        series: Point forecast, g/kWh.
        sigma: 1σ error (g/kWh) per step of ``series``; zeros when the
            values are taken as known; ``None`` when the source gives none.
        source: Where it came from, e.g. ``"Electricity Maps API v3 (…forecast)"``.
        uncertainty: How ``sigma`` was obtained, for the output.
        correlation: Correlation of the errors by lag in steps (index 0 =
            same step); ``None``: one error shifts the whole forecast.
        near_correlation: Full correlation matrix of the errors over the
            first steps of ``series``, where it is known better than by lag.
        per_day: Steps a day, for extending ``correlation`` past its end.
        history_end_s: End of the history a forecaster used, if any.
        notes: Anything the plan should repeat (history age, extrapolation).
    """

    location: str
    series: StepSeries
    sigma: np.ndarray[Any, Any] | None
    source: str
    uncertainty: str
    correlation: np.ndarray[Any, Any] | None = None
    near_correlation: np.ndarray[Any, Any] | None = None
    per_day: int = 24
    history_end_s: float | None = None
    notes: tuple[str, ...] = field(default=())

    @classmethod
    def known(cls, location: str, series: StepSeries, source: str, why: str) -> Forecast:
        """Values taken as exact (a forecast file, a perfect-forecast what-if)."""
        import numpy as np

        return cls(location, series, np.zeros(len(series.values)), source, why)


def correlation_at(rho: Any, lags: int, per_day: int) -> Any:
    """ρ for lags 0…lags−1: the measured values, then decaying by e every day."""
    import numpy as np

    if lags <= len(rho):
        return rho[:lags]
    beyond = np.arange(1, lags - len(rho) + 1)
    return np.concatenate((rho, rho[-1] * np.exp(-beyond / per_day)))

from __future__ import annotations

import math

import numpy as np
import pytest

from greenml.accounting.series import StepSeries, weighted_total
from greenml.errors import ConfigError

HOUR = 3600.0


def hourly(values: list[float], start: float = 0.0) -> StepSeries:
    return StepSeries.from_points([start + i * HOUR for i in range(len(values))], values, "g/kWh")


def test_energy_is_weighted_by_the_hour_it_was_used_in() -> None:
    series = hourly([100.0, 500.0])
    # 1 kW for the first hour, nothing in the second: all energy at 100 g/kWh
    times = [0.0, HOUR, 2 * HOUR]
    cumulative_kwh = [0.0, 1.0, 1.0]
    assert weighted_total(times, cumulative_kwh, series) == pytest.approx(100.0)
    # the same energy spread evenly would give the mean, 300 g/kWh: not what happened
    assert series.mean(0.0, 2 * HOUR) == pytest.approx(300.0)


def test_partial_steps_at_both_ends() -> None:
    series = hourly([100.0, 200.0, 400.0])
    # constant 1 kW from 0:30 to 2:15
    t = np.array([0.5, 2.25]) * HOUR
    c = np.array([0.0, 1.75])
    expected = 0.5 * 100 + 1.0 * 200 + 0.25 * 400
    assert weighted_total(t, c, series) == pytest.approx(expected)


def test_a_constant_covers_all_time() -> None:
    series = StepSeries.constant(429.0, "g/kWh")
    assert series.covers(-1e12, 1e12)
    assert math.isinf(series.end_s)
    assert weighted_total([0.0, 10.0, 20.0], [0.0, 2.0, 3.0], series) == pytest.approx(3 * 429.0)
    assert series.value_at(1.7e9) == 429.0


def test_a_span_outside_the_series_is_an_error_naming_it() -> None:
    series = hourly([100.0, 200.0], start=1.7e9)
    with pytest.raises(ConfigError, match="2023-11-14"):
        weighted_total([1.7e9 - 10, 1.7e9 + 10], [0.0, 1.0], series)
    with pytest.raises(ConfigError):
        series.value_at(1.7e9 + 3 * HOUR)


def test_bad_points_are_rejected() -> None:
    with pytest.raises(ConfigError):
        StepSeries.from_points([0.0, 0.0], [1.0, 2.0], "g/kWh")
    with pytest.raises(ConfigError):
        StepSeries.from_points([], [], "g/kWh")

"""The contiguous window: time-weighted means with partial steps, exact best start, errors."""

from __future__ import annotations

import numpy as np
import pytest

from greenml.accounting.series import StepSeries
from greenml.errors import ConfigError
from greenml.schedule.window import Integral, best_window, first_minimum, window_means

H = 3600.0
T0 = 1_685_577_600.0  # 2023-06-01 00:00 UTC


def hourly(values: list[float] | np.ndarray, start: float = T0) -> StepSeries:
    v = np.asarray(values, dtype=float)
    return StepSeries(start + H * np.arange(len(v)), v, H, "g/kWh")


def brute_mean(series: StepSeries, start: float, duration: float, points: int = 20_000) -> float:
    """Mean by dense sampling (midpoints), independent of the cumulative integral."""
    t = start + (np.arange(points) + 0.5) * duration / points
    idx = np.searchsorted(series.times_s, t, side="right") - 1
    return float(series.values[idx].mean())


def test_partial_steps_are_weighted_by_overlap() -> None:
    s = hourly([100, 200, 300])
    integral = Integral(s, T0, T0 + 3 * H)
    # 10:30–11:30 style: half of 100 and half of 200
    assert integral.mean([T0 + 0.5 * H], [T0 + 1.5 * H])[0] == pytest.approx(150.0)
    # 15 min of 100, 60 of 200, 15 of 300 → (25 + 200 + 75) / 1.5
    assert integral.mean([T0 + 0.75 * H], [T0 + 2.25 * H])[0] == pytest.approx(200.0)


def test_best_window_equals_a_dense_search_with_off_grid_times() -> None:
    rng = np.random.default_rng(7)
    s = hourly(200 + 100 * np.sin(np.arange(72) / 24 * 2 * np.pi) + rng.normal(0, 20, 72))
    earliest, deadline, duration = T0 + 10.5 * H, T0 + 60.25 * H, 5400.0  # 90 min
    found = best_window(s, earliest, deadline, duration)
    assert earliest <= found.start_s and found.end_s <= deadline
    assert found.mean == pytest.approx(brute_mean(s, found.start_s, duration), rel=1e-3)
    starts = np.arange(earliest, deadline - duration + 1, 60.0)  # every minute
    dense = [brute_mean(s, a, duration, 400) for a in starts]
    assert found.mean <= min(dense) + 1e-6 * abs(min(dense)) + 0.5  # sampling error < 0.5


def test_end_aligned_candidate_wins_and_ties_go_to_the_earliest() -> None:
    values = [300.0] * 10
    values[5] = 50.0  # one cheap hour, 05:00–06:00
    s = hourly(values)
    found = best_window(s, T0, T0 + 10 * H, 1.5 * H)
    # any 90-min window holding the whole cheap hour has the same mean; the
    # earliest such window ends with the step, it starts half an hour before it
    assert found.start_s == pytest.approx(T0 + 4.5 * H)
    assert found.mean == pytest.approx((0.5 * 300 + 50) / 1.5)


def test_flat_series_starts_at_the_earliest_time() -> None:
    found = best_window(hourly([120.0] * 48), T0 + 3 * H, T0 + 40 * H, 4 * H)
    assert found.start_s == T0 + 3 * H


def test_constant_series_covers_any_window() -> None:
    found = best_window(StepSeries.constant(250.0, "g/kWh"), T0, T0 + 5 * H, 2 * H)
    assert (found.start_s, found.mean) == (T0, 250.0)


def test_year_long_span_matches_a_cumulative_sum_argmin() -> None:
    rng = np.random.default_rng(3)
    values = 300 + 150 * np.sin(np.arange(8760) / 24 * 2 * np.pi) + rng.normal(0, 30, 8760)
    s = hourly(values)
    found = best_window(s, T0, T0 + 8760 * H, 6 * H)
    c = np.concatenate(([0.0], np.cumsum(values)))
    means = (c[6:] - c[:-6]) / 6
    assert found.mean == pytest.approx(means.min())
    assert found.start_s == T0 + H * int(np.argmin(means))


def test_candidates_include_grid_and_end_aligned_starts() -> None:
    starts, means = window_means(hourly([1, 2, 3, 4]), T0 + 0.25 * H, T0 + 4 * H, 1.5 * H)
    assert set(np.round((starts - T0) / H, 3)) == {0.25, 0.5, 1.0, 1.5, 2.0, 2.5}
    assert len(means) == len(starts)


def test_series_that_does_not_cover_names_the_missing_span() -> None:
    s = hourly([100.0] * 24)
    with pytest.raises(ConfigError, match=r"no data for 2023-06-02 00:00 UTC to 2023-06-02 06:00"):
        best_window(s, T0 + 20 * H, T0 + 30 * H, 2 * H)
    with pytest.raises(ConfigError, match="no data for 2023-05-31 22:00 UTC to 2023-06-01 00:00"):
        best_window(s, T0 - 2 * H, T0 + 5 * H, 2 * H)


def test_span_shorter_than_job_and_bad_duration() -> None:
    s = hourly([100.0] * 24)
    with pytest.raises(ConfigError, match="shorter than the job"):
        best_window(s, T0, T0 + 2 * H, 3 * H)
    with pytest.raises(ConfigError, match="positive duration"):
        best_window(s, T0, T0 + 2 * H, 0.0)


def test_first_minimum_ignores_nan_and_breaks_ties_early() -> None:
    assert first_minimum([np.nan, 3.0, 1.0, 1.0 + 1e-13, 0.5 + np.inf]) == 2
    with pytest.raises(ConfigError):
        first_minimum([np.nan, np.inf])

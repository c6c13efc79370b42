"""Planning on a short history: the zone's packaged typical profile, scaled, a wide interval."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from greenml.accounting.series import StepSeries
from greenml.accounting.traces import load_trace
from greenml.errors import ConfigError
from greenml.schedule import profile, sources
from greenml.schedule.job import Job
from greenml.schedule.planner import plan_job
from greenml.schedule.saving import saving_interval

H = 3600.0
T0 = 1_672_531_200.0  # 2023-01-01 00:00 UTC, a Sunday
SHARED = Path(__file__).parents[2].parent / "shared" / "data" / "carbon_intensity"
GB = SHARED / "GB_2023_hourly.csv"
needs_shared = pytest.mark.skipif(not GB.exists(), reason=f"no shared data at {GB}")


def hourly(values: np.ndarray, start: float = T0) -> StepSeries:
    return StepSeries(start + H * np.arange(len(values)), np.asarray(values, float), H, "g/kWh")


def utc(time_s: float) -> datetime:
    return datetime.fromtimestamp(time_s, tz=timezone.utc)


def test_the_packaged_profile_knows_weekdays_weekends_and_aliases() -> None:
    monday_noon, sunday_noon = T0 + (24 + 12) * H, T0 + 12 * H
    weekday, weekend = profile.profile_values("GB", [monday_noon, sunday_noon])
    assert 10 < weekend < 1000 and 10 < weekday < 1000 and weekday != weekend
    assert profile.has_profile("DE-LU") and profile.has_profile("de")  # the file's alias, the id
    assert not profile.has_profile("XX")


def test_a_week_of_history_scales_the_profile_to_its_level() -> None:
    times = T0 + H * np.arange(7 * 24)
    history = hourly(2.0 * profile.profile_values("GB", times))  # twice the typical day
    now = T0 + 7 * 24 * H
    f = sources.history_forecast("GB", history, "my trace", now, now + 24 * H)
    expected = 2.0 * profile.profile_values("GB", f.series.times_s)
    np.testing.assert_allclose(f.series.values, expected, rtol=1e-9)
    assert f.source.startswith("typical profile of GB (2023 hourly means, Electricity Maps)")
    assert "scaled to the last 7 days of my trace" in f.source
    assert f.sigma is not None
    np.testing.assert_allclose(f.sigma / f.series.values, profile.SIGMA_LOG_FLOOR)  # a perfect fit
    assert any("only 7 days of history" in n for n in f.notes)


def test_a_zone_without_a_profile_still_needs_42_days() -> None:
    history = hourly(np.full(7 * 24, 300.0))
    now = T0 + 7 * 24 * H
    with pytest.raises(ConfigError, match="needs 42 days of history before now"):
        sources.history_forecast("XX", history, "t", now, now + 24 * H)


def test_less_than_a_day_is_not_enough_even_with_a_profile() -> None:
    history = hourly(np.full(12, 300.0))
    now = T0 + 12 * H
    with pytest.raises(ConfigError, match="needs 42 days of history before now"):
        sources.history_forecast("GB", history, "t", now, now + 24 * H)


@needs_shared
def test_a_plan_on_7_days_names_the_profile_and_is_less_sure_than_on_60() -> None:
    trace = load_trace(GB)
    history = trace.series

    def plan_at(days: int) -> tuple[object, tuple[float, float]]:
        now = T0 + days * 24 * H
        job = Job(4 * H, utc(now), utc(now + 24 * H))
        plan = plan_job(job, ["GB"], history_or_forecast={"GB": history}, now=utc(now))
        f = sources.history_forecast("GB", history, "GB trace", now, now + 24 * H)
        later = [(now + 10 * H, now + 14 * H)]
        interval = saving_interval(f, later, f, [(now, now + 4 * H)], 0.9)
        assert interval is not None
        return plan, interval

    short, short_interval = plan_at(7)
    long, long_interval = plan_at(60)
    assert "typical profile of GB (2023 hourly means" in short.forecast_source  # type: ignore[attr-defined]
    assert "scaled to the last 7 days" in short.forecast_source  # type: ignore[attr-defined]
    assert "seasonal forecaster" in long.forecast_source  # type: ignore[attr-defined]
    width = short_interval[1] - short_interval[0]
    assert width > long_interval[1] - long_interval[0]
    low, high = short.saving_pct_interval  # type: ignore[attr-defined]
    assert high - low > 0

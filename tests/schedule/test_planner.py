"""plan_job: temporal and spatial choice, objectives, baseline and saving, errors."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from greenml.accounting.intensity import GridIntensity, IntensityProvenance
from greenml.accounting.series import StepSeries
from greenml.errors import ConfigError
from greenml.schedule.forecast import Forecast
from greenml.schedule.job import Job
from greenml.schedule.objective import Objective
from greenml.schedule.planner import plan_job
from greenml.schedule.window import Integral, window_means

H = 3600.0
START = datetime(2023, 6, 1, tzinfo=timezone.utc)
T0 = START.timestamp()


def hourly(values: list[float] | np.ndarray, unit: str = "g/kWh") -> StepSeries:
    v = np.asarray(values, dtype=float)
    return StepSeries(T0 + H * np.arange(len(v)), v, H, unit)


def known(name: str, values: list[float] | np.ndarray) -> Forecast:
    return Forecast.known(name, hourly(values), f"{name} test trace", "none: exact")


def job(hours: float = 4, window_h: float = 24, **kw: object) -> Job:
    return Job(hours * H, START, START + timedelta(hours=window_h), **kw)  # type: ignore[arg-type]


def day(low_hour: int, low: float = 100.0, high: float = 400.0, n: int = 30) -> list[float]:
    values = [high] * n
    values[low_hour : low_hour + 4] = [low] * 4
    return values


def test_temporal_plan_finds_the_valley_and_states_the_saving() -> None:
    plan = plan_job(job(power_w=500), ["A"], history_or_forecast={"A": known("A", day(10))},
                    now=START)  # fmt: skip
    assert plan.start == START + timedelta(hours=10)
    assert [c.location for c in plan.chunks] == ["A"]
    assert plan.mean_intensity_g_per_kwh == pytest.approx(100.0)
    assert plan.baseline_mean_intensity_g_per_kwh == pytest.approx(400.0)
    assert plan.saving_pct == pytest.approx(75.0)
    assert plan.saving_pct_interval == (pytest.approx(75.0), pytest.approx(75.0))
    assert plan.expected_g == pytest.approx(2.0 * 100.0)  # 500 W × 4 h = 2 kWh
    assert plan.baseline_g == pytest.approx(800.0)
    assert plan.forecast_source == "A test trace"
    assert json.loads(json.dumps(plan.to_dict()))["start"] == "2023-06-01T10:00:00Z"


def test_spatial_and_temporal_together_pick_the_best_place_and_time() -> None:
    tables = {"A": known("A", day(10, low=200)), "B": known("B", day(16, low=50)),
              "C": known("C", [300.0] * 30)}  # fmt: skip
    plan = plan_job(job(), ["A", "B", "C"], history_or_forecast=tables, now=START)
    assert plan.location == "B" and plan.start == START + timedelta(hours=16)
    assert plan.baseline_location == "A"
    assert plan.saving_pct == pytest.approx(100 * (1 - 50 / 400))
    assert [o.location for o in plan.options] == ["A", "B", "C"]
    assert plan.options[0].mean_intensity_g_per_kwh == pytest.approx(200.0)


def test_allow_list_filters_candidates_but_keeps_here_as_baseline() -> None:
    tables = {"A": known("A", day(10, low=200)), "B": known("B", day(16, low=50))}
    plan = plan_job(job(), ["B", "A"], history_or_forecast=tables, now=START, allow=["a"])
    assert plan.location == "A" and plan.baseline_location == "B"
    with pytest.raises(ConfigError, match="no candidate is allowed: candidates A, B; allowed FR"):
        plan_job(job(), ["A", "B"], history_or_forecast=tables, now=START, allow=["FR"])


def test_interruptible_job_beats_contiguous_when_it_can() -> None:
    values = [400.0] * 30
    values[3:5] = [100.0, 100.0]
    values[15:17] = [90.0, 90.0]
    table = {"A": known("A", values)}
    whole = plan_job(job(), ["A"], history_or_forecast=table, now=START)
    cut = plan_job(job(interruptible=True, min_chunk_s=H, max_pieces=2), ["A"],
                   history_or_forecast=table, now=START)  # fmt: skip
    assert len(whole.chunks) == 1 and len(cut.chunks) == 2
    assert cut.mean_intensity_g_per_kwh == pytest.approx(95.0)
    assert cut.saving_pct > whole.saving_pct
    assert sum(c.duration_s for c in cut.chunks) == pytest.approx(4 * H)
    assert all(c.duration_s >= H for c in cut.chunks)


def test_carbon_cost_weight_moves_between_the_two_optima() -> None:
    carbon = day(4, low=100)  # carbon cheapest 04–08
    price = day(14, low=10.0, high=80.0)  # price cheapest 14–18
    args = {"history_or_forecast": {"A": known("A", carbon)}, "now": START,
            "prices": {"A": hourly(price, "USD/MWh")}}  # fmt: skip
    green = plan_job(job(power_w=1000), ["A"], objective=Objective(1.0), **args)  # type: ignore[arg-type]
    cheap = plan_job(job(power_w=1000), ["A"], objective=Objective(0.0), **args)  # type: ignore[arg-type]
    assert green.start == START + timedelta(hours=4)
    assert cheap.start == START + timedelta(hours=14)
    assert cheap.expected_usd == pytest.approx(4 * 10.0 / 1000)  # 4 kWh at $10/MWh
    assert cheap.cost_change_pct == pytest.approx(100 * (10 - 80) / 80)
    assert cheap.price_source == "price series"


def test_cost_cap_gives_least_carbon_within_the_cap() -> None:
    rng = np.random.default_rng(4)
    carbon = rng.uniform(100, 400, 40)
    price = rng.uniform(20, 120, 40)
    j = job(window_h=36)
    table = {"A": known("A", carbon)}
    prices = {"A": hourly(price, "USD/MWh")}
    plan = plan_job(j, ["A"], history_or_forecast=table, now=START, prices=prices,
                    objective=Objective(max_cost_increase=0.05))  # fmt: skip
    a, b, d = j.earliest_start_s, j.deadline_s, j.duration_s
    starts, carbon_means = window_means(hourly(carbon), a, b, d)
    price_means = Integral(hourly(price, "USD/MWh"), a, b).mean(starts, starts + d)
    cap = price_means[0] * 1.05
    feasible = price_means <= cap + 1e-9
    assert plan.mean_price_usd_per_mwh <= cap + 1e-9
    assert plan.mean_intensity_g_per_kwh == pytest.approx(carbon_means[feasible].min())
    cut = plan_job(job(window_h=36, interruptible=True, min_chunk_s=H, max_pieces=3), ["A"],
                   history_or_forecast=table, now=START, prices=prices,
                   objective=Objective(max_cost_increase=0.05))  # fmt: skip
    assert cut.mean_price_usd_per_mwh <= cap + 1e-6
    assert cut.mean_intensity_g_per_kwh <= plan.mean_intensity_g_per_kwh + 1e-9


def test_history_is_forecast_at_now_with_an_interval() -> None:
    rng = np.random.default_rng(0)
    n = 90 * 24
    hour = np.arange(n) % 24
    values = 400 - 150 * np.clip(np.sin((hour - 6) / 12 * np.pi), 0, None) + rng.normal(0, 15, n)
    start = datetime(2023, 1, 1, tzinfo=timezone.utc)
    series = StepSeries(start.timestamp() + H * np.arange(n), values, H, "g/kWh")
    prov = IntensityProvenance("trace file x.csv", "X", "hourly", "average", "lifecycle")
    now = start + timedelta(days=80)  # history after now is not used
    plan = plan_job(Job(4 * H, now, now + timedelta(hours=24)), ["X"],
                    history_or_forecast={"X": GridIntensity(series, prov)}, now=now)  # fmt: skip
    assert 9 <= plan.start.hour <= 12  # the solar dip of the profile
    low, high = plan.saving_pct_interval
    assert low < plan.saving_pct < high
    assert plan.saving_pct > 20
    assert "seasonal forecaster from X history" in plan.forecast_source
    assert "interval" in plan.uncertainty


def test_errors_are_one_clear_config_error() -> None:
    table = {"A": known("A", day(10))}
    with pytest.raises(ConfigError, match="earliest feasible deadline is 2023-06-01T04:00Z"):
        Job(4 * H, START, START + timedelta(hours=3))
    with pytest.raises(ConfigError, match="duration must be positive"):
        Job(0.0, START, START + timedelta(hours=3))
    with pytest.raises(ConfigError, match="no candidate location"):
        plan_job(job(), [], history_or_forecast=table, now=START)
    with pytest.raises(ConfigError, match="no intensity forecast or history for B"):
        plan_job(job(), ["B"], history_or_forecast=table, now=START)
    with pytest.raises(ConfigError, match="before now"):
        plan_job(job(), ["A"], history_or_forecast=table, now=START + timedelta(hours=1))
    with pytest.raises(ConfigError, match="no data for 2023-06-02 06:00 UTC to 2023-06-02 12:00"):
        plan_job(job(window_h=36), ["A"], history_or_forecast=table, now=START)
    with pytest.raises(ConfigError, match="needs electricity prices for A"):
        plan_job(job(), ["A"], history_or_forecast=table, now=START, objective=Objective(0.5))
    with pytest.raises(ConfigError, match="not both"):
        Objective(0.5, 0.1)


def test_job_from_energy_and_piece_limit() -> None:
    j = Job.from_energy(3.6e6 * 2, 500.0, START, START + timedelta(hours=8),
                        interruptible=True, min_chunk_s=3600.0)  # fmt: skip
    assert j.duration_s == pytest.approx(4 * H) and j.energy_kwh == pytest.approx(2.0)
    assert j.piece_limit == 4
    assert job(interruptible=False).piece_limit == 1
    with pytest.raises(ConfigError, match="no time zone"):
        Job(H, datetime(2023, 6, 1), START + timedelta(hours=3))


@pytest.mark.parametrize("sigma_g", [1.0, 60.0, 400.0, 5000.0])
def test_the_saving_interval_never_reaches_100_percent(sigma_g: float) -> None:
    from greenml.schedule.saving import saving_interval

    values = np.array([400.0, 400.0, 40.0, 40.0])
    series = StepSeries(H * np.arange(4), values, H, "g/kWh")
    forecast = Forecast("X", series, np.full(4, sigma_g), "test", "test")
    interval = saving_interval(forecast, [(2 * H, 4 * H)], forecast, [(0.0, 2 * H)])
    assert interval is not None
    low, high = interval
    assert low < 90.0 < high <= 100.0  # the point saving, 90 %, inside; never above 100 %
    if sigma_g <= 400:
        assert high < 100.0
    if sigma_g >= 400:
        assert low < 0  # a forecast this poor cannot promise any saving

"""Time-weighted carbon: the hour the energy was used in decides its intensity."""

from __future__ import annotations

import math

import numpy as np
import pytest

from greenml.accounting.carbon import (
    Carbon,
    carbon_of,
    intensity_steps,
    intensity_uncertainty,
    naive_carbon_kg,
)
from greenml.accounting.intensity import ConstantSource, GridIntensity, IntensityProvenance
from greenml.accounting.profile import energy_profile, total_power
from greenml.accounting.pue import Pue, pue_for
from greenml.accounting.series import StepSeries
from greenml.errors import ConfigError

HOUR = 3600.0
KWH = 3.6e6
T0 = 1.7e9 - (1.7e9 % HOUR)  # an hour boundary in November 2023
ONE = Pue(1.0, "test")


def hourly(values: list[float], start: float = T0) -> GridIntensity:
    series = StepSeries.from_points(
        [start + i * HOUR for i in range(len(values))], values, "g/kWh", last_step_s=HOUR
    )
    prov = IntensityProvenance("test trace", "XX", "hourly", "average", "lifecycle")
    return GridIntensity(series, prov)


def constant(g_per_kwh: float) -> GridIntensity:
    return ConstantSource.user(g_per_kwh).intensity(0.0, 1.0)


def test_energy_used_in_the_clean_hour_is_charged_the_clean_hour() -> None:
    grid = hourly([50.0, 500.0])
    # 1 kW through the first (clean) hour, idle in the second
    times = [T0, T0 + HOUR - 1, T0 + HOUR, T0 + 2 * HOUR]
    power = [1000.0, 1000.0, 0.0, 0.0]
    carbon = carbon_of(times, power, KWH, grid, ONE)
    assert carbon.kg == pytest.approx(0.050, rel=1e-3)
    assert carbon.intensity_g_per_kwh == pytest.approx(50.0, rel=1e-3)
    assert carbon.method == "time-weighted, hourly intensity"
    # the mean intensity over the run × energy is what a naive tool reports: 5.5× too high
    naive = naive_carbon_kg(KWH, grid, ONE, T0, T0 + 2 * HOUR)
    assert naive == pytest.approx(0.275)
    assert naive / carbon.kg > 5


def test_the_same_energy_in_the_dirty_hour_costs_ten_times_more() -> None:
    grid = hourly([50.0, 500.0])
    times = [T0, T0 + HOUR, T0 + HOUR + 1, T0 + 2 * HOUR]
    power = [0.0, 0.0, 1000.0, 1000.0]
    assert carbon_of(times, power, KWH, grid, ONE).kg == pytest.approx(0.5, rel=1e-3)


def test_pue_turns_it_energy_into_facility_energy() -> None:
    grid = constant(400.0)
    carbon = carbon_of([T0, T0 + HOUR], [500.0, 500.0], 2 * KWH, grid, Pue(1.5, "test"))
    assert carbon.it_energy_j == pytest.approx(2 * KWH)
    assert carbon.facility_energy_j == pytest.approx(3 * KWH)
    assert carbon.kg == pytest.approx(3 * 0.4)
    assert carbon.intensity_g_per_kwh == pytest.approx(400.0)
    block = carbon.to_dict()
    assert block["it_energy_kwh"] == pytest.approx(2.0)
    assert block["facility_energy_kwh"] == pytest.approx(3.0)
    assert block["pue"] == 1.5
    assert block["pue_source"] == "test"


def test_provider_pue_and_its_source_are_reported() -> None:
    carbon = carbon_of([], [], KWH, constant(100.0), pue_for(provider="gcp"), start_s=T0, end_s=T0)
    assert carbon.pue == pytest.approx(1.10)
    assert "Google" in carbon.pue_source
    assert carbon.kg == pytest.approx(0.110)


def test_the_timeline_gives_the_shape_and_the_counters_the_total() -> None:
    grid = hourly([100.0, 300.0])
    # sampled power integrates to 4 kWh, 3 of them in the first hour; counters said 2 kWh
    times = [T0, T0 + HOUR, T0 + HOUR + 1e-6, T0 + 2 * HOUR]
    power = [3000.0, 3000.0, 1000.0, 1000.0]
    carbon = carbon_of(times, power, 2 * KWH, grid, ONE)
    assert carbon.it_energy_j == pytest.approx(2 * KWH)
    assert carbon.kg == pytest.approx((1.5 * 100 + 0.5 * 300) / 1000, rel=1e-6)


def test_profile_is_scaled_exactly_to_the_measured_energy() -> None:
    rng = np.random.default_rng(1)
    times = T0 + np.cumsum(rng.uniform(0.5, 1.5, 5000))
    power = rng.uniform(100, 400, 5000)
    profile = energy_profile(times, power, 123_456.0)
    assert profile.total_j == 123_456.0
    assert np.all(np.diff(profile.cumulative_j) >= 0)
    assert not profile.evenly


def test_the_run_span_clips_and_extends_the_timeline() -> None:
    # readings from T0+10 to T0+20 at 100 W; the run went from T0 to T0+30
    profile = energy_profile([T0 + 10, T0 + 20], [100.0, 100.0], 30.0, start_s=T0, end_s=T0 + 30)
    assert profile.times_s[0] == T0 and profile.times_s[-1] == T0 + 30
    # power held at 100 W before the first reading: a third of the energy by T0+10
    assert np.interp(T0 + 10, profile.times_s, profile.cumulative_j) == pytest.approx(10.0)


def test_without_a_timeline_the_energy_is_spread_evenly_and_labelled() -> None:
    grid = hourly([100.0, 300.0])
    carbon = carbon_of([], [], KWH, grid, ONE, start_s=T0, end_s=T0 + 2 * HOUR)
    assert carbon.kg == pytest.approx(0.2)  # the mean, which is all one can say
    assert "spread evenly" in carbon.method
    # one reading is no timeline either
    one = carbon_of([T0 + 5], [300.0], KWH, grid, ONE, start_s=T0, end_s=T0 + 2 * HOUR)
    assert "spread evenly" in one.method


def test_no_timeline_and_no_span_is_an_error() -> None:
    with pytest.raises(ConfigError, match="no power timeline"):
        carbon_of([], [], KWH, constant(100.0), ONE)


def test_a_run_of_zero_duration_takes_the_intensity_of_its_instant() -> None:
    grid = hourly([100.0, 300.0])
    carbon = carbon_of([], [], KWH, grid, ONE, start_s=T0 + HOUR + 5, end_s=T0 + HOUR + 5)
    assert carbon.kg == pytest.approx(0.3)


def test_a_user_figure_is_labelled_as_such() -> None:
    carbon = carbon_of([T0, T0 + 60], [100.0, 100.0], 6000.0, constant(400.0), ONE)
    assert carbon.method == "intensity given by the user × energy"
    assert "given by the user" in carbon.source
    assert carbon.kg == pytest.approx(6000.0 / KWH * 0.4)


def test_a_yearly_average_is_labelled_as_such() -> None:
    prov = IntensityProvenance("OWID", "FR", "yearly", "average", "lifecycle", year=2023)
    grid = GridIntensity(StepSeries.constant(56.0, "g/kWh"), prov)
    carbon = carbon_of([T0, T0 + 60], [100.0, 100.0], 6000.0, grid, ONE)
    assert carbon.method == "yearly average intensity × energy"
    assert carbon.source == prov.describe()
    assert (carbon.kind, carbon.scope, carbon.resolution) == ("average", "lifecycle", "yearly")


def test_an_intensity_that_does_not_cover_the_run_is_an_error() -> None:
    grid = hourly([100.0, 300.0])
    with pytest.raises(ConfigError, match="not the run's"):
        carbon_of([T0 + 3 * HOUR, T0 + 4 * HOUR], [1.0, 1.0], KWH, grid, ONE)


def test_uncertainty_combines_energy_and_intensity_in_quadrature() -> None:
    grid = hourly([100.0, 300.0])
    carbon = carbon_of([T0, T0 + HOUR], [1.0, 1.0], KWH, grid, ONE, energy_uncertainty_rel=0.05)
    assert carbon.intensity_uncertainty_rel == 0.10
    assert carbon.uncertainty_rel == pytest.approx(math.hypot(0.05, 0.10))


def test_an_average_is_less_certain_for_a_short_run_than_for_a_long_one() -> None:
    assert intensity_uncertainty("yearly", 60) == pytest.approx(0.25)
    assert intensity_uncertainty("yearly", 86_400) == pytest.approx(0.15)
    assert intensity_uncertainty("user", 30 * 86_400) == pytest.approx(0.10)
    assert 0.15 < intensity_uncertainty("monthly", 6 * HOUR) < 0.25
    assert intensity_uncertainty("hourly", 60) == pytest.approx(0.10)
    spans = [60, HOUR, 5 * HOUR, 86_400, 3 * 86_400, 7 * 86_400, 1e8]
    values = [intensity_uncertainty("yearly", d) for d in spans]
    assert values == sorted(values, reverse=True)


def test_the_record_block_has_the_keys_reports_read() -> None:
    carbon = carbon_of([T0, T0 + 60], [100.0, 100.0], 6000.0, constant(400.0), ONE)
    assert isinstance(carbon, Carbon)
    block = carbon.to_dict()
    for key in ("kg", "intensity_g_per_kwh", "source", "pue", "method", "uncertainty_rel",
                "it_energy_kwh", "facility_energy_kwh", "kind", "scope", "pue_source"):  # fmt: skip
        assert key in block
    assert block["status"] == "ok"


def test_device_timelines_are_summed_on_the_union_of_their_times() -> None:
    times, power = total_power([([0.0, 2.0], [10.0, 10.0]), ([1.0, 3.0], [5.0, 7.0]), ([], [])])
    assert list(times) == [0.0, 1.0, 2.0, 3.0]
    assert list(power) == [15.0, 15.0, 16.0, 17.0]  # held constant outside a device's readings
    empty_t, empty_p = total_power([])
    assert len(empty_t) == 0 and len(empty_p) == 0


def test_a_time_varying_intensity_is_kept_for_plotting() -> None:
    grid = hourly([50.0, 500.0, 80.0])
    carbon = carbon_of([], [], KWH, grid, ONE, start_s=T0 + 600, end_s=T0 + 2 * HOUR + 60)
    assert carbon.intensity_series == (
        (T0 + 600, 50.0), (T0 + HOUR, 500.0), (T0 + 2 * HOUR, 80.0), (T0 + 2 * HOUR + 60, 80.0)
    )  # fmt: skip
    assert carbon.to_dict()["intensity_series"][1] == [T0 + HOUR, 500.0]


def test_a_constant_intensity_has_no_series() -> None:
    carbon = carbon_of([T0, T0 + 60], [100.0, 100.0], 6000.0, constant(400.0), ONE)
    assert carbon.intensity_series is None
    assert "intensity_series" not in carbon.to_dict()


def test_a_long_series_is_thinned_to_the_cap_with_both_ends_kept() -> None:
    grid = hourly([float(i % 24) for i in range(1000)])
    end = T0 + 999.5 * HOUR
    steps = intensity_steps(grid, T0, end, max_points=50)
    assert len(steps) <= 50
    assert steps[0] == (T0, 0.0)
    assert steps[-1] == (end, float(999 % 24))
    assert [t for t, _ in steps] == sorted(t for t, _ in steps)

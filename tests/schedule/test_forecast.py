"""Forecasts: the seasonal forecaster's skill and honesty, the sources, and saving intervals."""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from greenml.accounting.intensity import IntensityProvenance
from greenml.accounting.live import ElectricityMapsSource, HttpSettings
from greenml.accounting.series import StepSeries
from greenml.accounting.static import zone_source
from greenml.accounting.traces import TraceSource, load_trace
from greenml.errors import ConfigError
from greenml.schedule import sources
from greenml.schedule.forecast import Forecast
from greenml.schedule.forecast_skill import evaluate, naive_forecasts
from greenml.schedule.saving import saving_interval, sigma_of_mean
from greenml.schedule.seasonal import MIN_HISTORY_DAYS, fit_seasonal, min_origin, predict
from tests.accounting.live.conftest import FakeApi, _handler, load

H = 3600.0
T0 = 1_672_531_200.0  # 2023-01-01 00:00 UTC
SHARED = Path(__file__).parents[2].parent / "shared" / "data" / "carbon_intensity"
needs_shared = pytest.mark.skipif(
    not (SHARED / "DE-LU_2023_hourly.csv").exists(), reason=f"no shared data at {SHARED}"
)


def synthetic(days: int, seed: int = 0) -> np.ndarray:
    """A daily solar dip and a weekly pattern on a slowly wandering (AR(1)) level, with noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(days * 24)
    hour = t % 24
    daily = -120 * np.clip(np.sin((hour - 6) / 12 * np.pi), 0, None)
    weekly = np.where((t // 24) % 7 >= 5, -40.0, 0.0)
    level = np.zeros(len(t))
    for i in range(1, len(t)):
        level[i] = 0.995 * level[i - 1] + rng.normal(0, 6)
    return 400 + daily + weekly + level + rng.normal(0, 10, len(t))


def hourly(values: np.ndarray, start: float = T0) -> StepSeries:
    return StepSeries(start + H * np.arange(len(values)), np.asarray(values, float), H, "g/kWh")


def test_forecaster_beats_persistence_and_day_ago_on_a_daily_pattern() -> None:
    y = synthetic(200)
    model = fit_seasonal(y[: 120 * 24], 24)
    origins = np.arange(120 * 24, 198 * 24, 24)
    h = np.arange(48)
    ours, _ = predict(model, y, origins, h)
    persistence, day_ago = naive_forecasts(y, origins, h, 24)
    truth = y[origins[:, None] + h]

    def mape(f: np.ndarray) -> float:
        return float(np.mean(np.abs(f - truth) / truth))

    assert mape(ours) < 0.8 * mape(persistence)
    assert mape(ours) < mape(day_ago)


def test_forecast_reads_nothing_after_its_origin() -> None:
    y = synthetic(80, seed=2)
    model = fit_seasonal(y[: 60 * 24], 24)
    changed = y.copy()
    changed[70 * 24 :] *= 3.0  # the future is different
    origin = [70 * 24]
    a, _ = predict(model, y, origin, np.arange(48))
    b, _ = predict(model, changed, origin, np.arange(48))
    np.testing.assert_array_equal(a, b)


def test_errors_grow_with_the_horizon_and_have_a_correlation() -> None:
    model = fit_seasonal(synthetic(150, seed=4), 24)
    assert model.sigma_log[47] > model.sigma_log[0]
    assert model.rho[0] == 1.0 and 0.0 <= model.rho[5] <= 1.0
    sigma, corr = model.near(0)
    assert sigma.shape == (48,) and corr.shape == (48, 48)
    np.testing.assert_allclose(np.diag(corr), 1.0)
    assert model.reach_days >= 30  # far horizons fitted when the history allows


def test_too_short_a_history_is_refused() -> None:
    with pytest.raises(ConfigError, match=f"{MIN_HISTORY_DAYS} days of history"):
        fit_seasonal(synthetic(30), 24)


def test_history_forecast_says_where_it_came_from_and_how_old_it_is() -> None:
    y = synthetic(120, seed=6)
    history = hourly(y)
    now = T0 + 150 * 24 * H  # 30 days after the history ends
    f = sources.history_forecast("XX", history, "test trace", now, now + 24 * H)
    assert f.series.start_s == T0 + 120 * 24 * H
    assert f.series.end_s >= now + 24 * H
    assert f.sigma is not None and np.all(f.sigma > 0) and len(f.sigma) == len(f.series.values)
    assert "seasonal forecaster from XX history 2023-01-01 to 2023-04-30" in f.source
    assert any("30.0 days before now" in n for n in f.notes)


def test_sub_hourly_history_is_forecast_hourly() -> None:
    y = np.repeat(synthetic(60, seed=3), 4)  # 15-minute values
    history = StepSeries(T0 + 900.0 * np.arange(len(y)), y, 900.0, "g/kWh")
    now = T0 + 60 * 24 * H
    f = sources.history_forecast("XX", history, "t", now, now + 12 * H)
    assert f.series.last_step_s == H and f.series.start_s == now
    assert "hourly means" in f.source


def test_history_forecast_needs_history_before_now_and_names_the_span() -> None:
    history = hourly(synthetic(120))
    with pytest.raises(ConfigError, match="no data for 2022-12-11 00:00 UTC to 2023-01-01 00:00"):
        sources.history_forecast("XX", history, "t", T0 + 21 * 24 * H, T0 + 22 * 24 * H)


def test_history_forecast_names_a_gap_it_reads_and_skips_older_ones() -> None:
    y = synthetic(90, seed=8)
    times = T0 + H * np.arange(len(y))

    def without(day: int) -> StepSeries:
        keep = np.ones(len(y), bool)
        keep[day * 24 : day * 24 + 5] = False  # five hours missing
        return StepSeries(times[keep], y[keep], H, "g/kWh")

    now = T0 + 90 * 24 * H
    old = sources.history_forecast("XX", without(40), "t", now, now + 24 * H)  # fit masks it
    assert np.all(np.isfinite(old.series.values))
    with pytest.raises(ConfigError, match="no data for 2023-03-29 00:00 UTC to 2023-03-29 05:00"):
        sources.history_forecast("XX", without(87), "t", now, now + 24 * H)


@needs_shared
def test_real_zone_forecaster_beats_persistence_at_24h() -> None:
    a = load_trace(SHARED / "DE-LU_2022_hourly.csv").series.values
    b = load_trace(SHARED / "DE-LU_2023_hourly.csv").series.values
    skill = evaluate(fit_seasonal(a, 24), np.concatenate([a, b]), len(a))
    assert skill.origins > 700
    assert skill.mape_24h_pct < skill.persistence_mape_24h_pct
    assert skill.mape_pct < skill.day_ago_mape_pct < skill.persistence_mape_pct
    assert 0 < skill.forecast_saving_pct <= skill.perfect_saving_pct
    assert skill.kept_pct > skill.day_ago_kept_pct
    assert 70 <= skill.coverage_pct <= 100


def known(values: list[float]) -> Forecast:
    return Forecast.known("XX", hourly(np.array(values)), "file", "none")


def test_saving_interval_is_a_point_for_known_values_and_none_without_sigma() -> None:
    f = known([300, 300, 100, 100])
    assert saving_interval(f, [(T0 + 2 * H, T0 + 4 * H)], f, [(T0, T0 + 2 * H)]) == (
        pytest.approx(200 / 3),
        pytest.approx(200 / 3),
    )
    blind = Forecast("XX", f.series, None, "provider", "no σ")
    assert saving_interval(blind, [(T0, T0 + H)], blind, [(T0, T0 + H)]) is None
    assert sigma_of_mean(blind, [(T0, T0 + H)]) is None


def test_saving_interval_widens_with_sigma_and_vanishes_for_the_same_window() -> None:
    series = hourly(np.array([300.0, 300.0, 100.0, 100.0]))
    rho = np.array([1.0, 0.5, 0.25, 0.1])

    def interval(sigma: float, plan: tuple[float, float]) -> tuple[float, float]:
        f = Forecast("XX", series, np.full(4, sigma), "s", "u", rho)
        found = saving_interval(f, [plan], f, [(T0, T0 + 2 * H)])
        assert found is not None
        return found

    narrow = interval(10.0, (T0 + 2 * H, T0 + 4 * H))
    wide = interval(40.0, (T0 + 2 * H, T0 + 4 * H))
    assert narrow[0] < 200 / 3 < narrow[1]

    def log_width(found: tuple[float, float]) -> float:  # the interval is built on ln(P/B)
        return math.log(1 - found[0] / 100) - math.log(1 - found[1] / 100)

    assert log_width(wide) == pytest.approx(4 * log_width(narrow))
    assert wide[1] < 100.0
    same = interval(40.0, (T0, T0 + 2 * H))
    assert same == (pytest.approx(0.0, abs=1e-9), pytest.approx(0.0, abs=1e-9))


def test_trace_forecast_takes_values_as_known_and_names_a_missing_span() -> None:
    prov = IntensityProvenance("trace file t.csv", "XX", "hourly", "average", "lifecycle")
    trace = TraceSource(hourly(np.arange(48.0) + 100), prov, "t.csv")
    f = sources.trace_forecast("XX", trace, T0, T0 + 24 * H)
    assert f.sigma is not None and not f.sigma.any()
    assert "taken as known" in f.source
    with pytest.raises(ConfigError, match="no data for 2023-01-03 00:00 to 12:00 UTC"):
        sources.trace_forecast("XX", trace, T0 + 40 * H, T0 + 60 * H)


def test_merge_traces_joins_years_and_refuses_overlaps() -> None:
    prov = IntensityProvenance("trace file a.csv", "XX", "hourly", "average", "lifecycle")
    a = TraceSource(hourly(np.full(24, 100.0)), prov, "a.csv")
    b = TraceSource(hourly(np.full(24, 200.0), T0 + 24 * H), prov, "b.csv")
    joined = sources.merge_traces([b, a])
    assert joined.series.start_s == T0 and joined.series.end_s == T0 + 48 * H
    assert "a.csv + b.csv" in joined.provenance.source
    with pytest.raises(ConfigError, match="overlap"):
        sources.merge_traces([a, a])


def test_yearly_mean_has_no_sigma_and_says_it_chooses_only_where() -> None:
    f = sources.yearly_forecast("DE-LU", zone_source("DE-LU"))
    assert f.sigma is None
    assert "yearly mean" in f.source and "only where" in f.notes[0]


@pytest.fixture
def api() -> Iterator[FakeApi]:
    """The accounting tests' stand-in for provider APIs, on 127.0.0.1."""
    fake = FakeApi()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_port}"
    yield fake
    server.shutdown()
    server.server_close()
    thread.join(5)


def test_provider_forecast_from_electricity_maps(api: FakeApi) -> None:
    api.route("/v3/carbon-intensity/forecast", load("electricitymaps_forecast.json"))
    fast = HttpSettings(connect_timeout_s=1.0, read_timeout_s=2.0, backoff_base_s=0.001)
    em = ElectricityMapsSource("DE", token="t0k", base_url=api.url + "/v3", http=fast)
    f = sources.provider_forecast("DE", em)
    assert f.sigma is None
    assert "Electricity Maps" in f.source and "forecast" in f.source
    assert "no uncertainty" in f.uncertainty
    assert f.series.values[0] == 302.0 and len(f.series.values) > 6


def test_min_origin_leaves_room_for_every_feature() -> None:
    y = synthetic(60)
    model = fit_seasonal(y, 24)
    point, sigma = predict(model, y, [min_origin(24)], np.arange(48))
    assert np.all(np.isfinite(point)) and np.all(sigma > 0)


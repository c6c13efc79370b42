from __future__ import annotations

import base64
import math
from datetime import datetime, timezone

import numpy as np
import pytest

from greenml.accounting.live import HttpSettings, IntensityApiError, WattTimeSource
from greenml.accounting.live.watttime import G_PER_KWH_PER_LB_PER_MWH
from greenml.errors import ConfigError
from tests.accounting.live.conftest import FakeApi, Reply, load
from tests.helpers import ManualClock

USER, PASSWORD = "greenml-user", "pa55-w0rd!"
TOKEN = load("watttime_login.json")["token"]


def ts(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(ts("2024-03-14T11:08"))


@pytest.fixture
def routes(api: FakeApi) -> FakeApi:
    api.route("/login", load("watttime_login.json"))
    api.route("/v3/historical", load("watttime_historical.json"))
    api.route("/v3/forecast", load("watttime_forecast.json"))
    api.route("/v3/signal-index", load("watttime_signal_index.json"))
    return api


def source(
    api: FakeApi, fast: HttpSettings, clock: ManualClock, **kwargs: object
) -> WattTimeSource:
    kwargs.setdefault("username", USER)
    kwargs.setdefault("password", PASSWORD)
    return WattTimeSource(
        "CAISO_NORTH",
        base_url=api.url,
        http=fast,
        clock=clock,
        **kwargs,  # type: ignore[arg-type]
    )


def test_lbs_per_mwh_become_grams_per_kwh() -> None:
    assert G_PER_KWH_PER_LB_PER_MWH == 0.45359237
    assert math.isclose(1000.0 * G_PER_KWH_PER_LB_PER_MWH, 453.59237)  # 453.59237 g per 1000 kWh


def test_historical_parsing_and_conversion(
    routes: FakeApi, fast: HttpSettings, clock: ManualClock
) -> None:
    start, end = ts("2024-03-14T09:00"), ts("2024-03-14T11:00")
    grid = source(routes, fast, clock).historical(start, end)
    series = grid.series
    assert len(series.times_s) == 24
    assert series.start_s == start and series.end_s == end
    assert np.all(np.diff(series.times_s) == 300.0)
    assert series.value_at(ts("2024-03-14T09:04")) == pytest.approx(453.59237)  # 1000 lbs/MWh
    assert series.values[-1] == pytest.approx(815.0 * 0.45359237)
    p = grid.provenance
    assert (p.location, p.resolution, p.kind, p.scope) == (
        "CAISO_NORTH",
        "sub-hourly",
        "marginal",
        "direct",
    )
    assert p.source == "WattTime API v3 (co2_moer, historical)"
    (request,) = routes.hits("/v3/historical")
    assert request.query == {
        "region": "CAISO_NORTH",
        "signal_type": "co2_moer",
        "start": "2024-03-14T09:00:00Z",
        "end": "2024-03-14T11:00:00Z",
    }


def test_login_uses_basic_auth_and_data_calls_the_bearer_token(
    routes: FakeApi, fast: HttpSettings, clock: ManualClock
) -> None:
    source(routes, fast, clock).signal_index()
    (login,) = routes.hits("/login")
    expected = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert login.headers["authorization"] == f"Basic {expected}"
    (data,) = routes.hits("/v3/signal-index")
    assert data.headers["authorization"] == f"Bearer {TOKEN}"


def test_token_is_cached_across_calls(
    routes: FakeApi, fast: HttpSettings, clock: ManualClock
) -> None:
    src = source(routes, fast, clock)
    src.historical(ts("2024-03-14T09:00"), ts("2024-03-14T10:00"))
    clock.advance(600)
    src.forecast()
    src.signal_index()
    assert len(routes.hits("/login")) == 1
    clock.advance(30 * 60)  # past the token's 30 minutes
    src.signal_index()
    assert len(routes.hits("/login")) == 2


def test_refused_token_logs_in_once_more(
    routes: FakeApi, fast: HttpSettings, clock: ManualClock
) -> None:
    routes.route(
        "/v3/signal-index", Reply({"error": "expired"}, 401), load("watttime_signal_index.json")
    )
    index = source(routes, fast, clock).signal_index()
    assert index.percentile == 37.1
    assert len(routes.hits("/login")) == 2
    assert len(routes.hits("/v3/signal-index")) == 2


def test_bad_credentials_are_one_line_without_the_password(
    api: FakeApi, fast: HttpSettings, clock: ManualClock
) -> None:
    api.route("/login", Reply({"error": f"bad password {PASSWORD}"}, 401))
    with pytest.raises(IntensityApiError) as info:
        source(api, fast, clock).signal_index()
    assert str(info.value) == (
        "WattTime: 401 Unauthorized on /login "
        "— check GREENML_WATTTIME_USERNAME and GREENML_WATTTIME_PASSWORD"
    )
    assert len(api.hits("/login")) == 1  # not retried
    assert api.hits("/v3/signal-index") == []


def test_credentials_from_the_environment(
    routes: FakeApi, fast: HttpSettings, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GREENML_WATTTIME_USERNAME", "env-user")
    monkeypatch.setenv("GREENML_WATTTIME_PASSWORD", "env-pass")
    WattTimeSource("CAISO_NORTH", base_url=routes.url, http=fast, clock=clock).signal_index()
    expected = base64.b64encode(b"env-user:env-pass").decode()
    assert routes.hits("/login")[0].headers["authorization"] == f"Basic {expected}"


def test_no_credentials_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GREENML_WATTTIME_USERNAME", raising=False)
    monkeypatch.delenv("GREENML_WATTTIME_PASSWORD", raising=False)
    with pytest.raises(ConfigError, match="GREENML_WATTTIME_USERNAME"):
        WattTimeSource("CAISO_NORTH")


def test_given_token_skips_login(routes: FakeApi, fast: HttpSettings, clock: ManualClock) -> None:
    WattTimeSource(
        "CAISO_NORTH", token="given-token", base_url=routes.url, http=fast, clock=clock
    ).signal_index()
    assert routes.hits("/login") == []
    assert routes.hits("/v3/signal-index")[0].headers["authorization"] == "Bearer given-token"


def test_forecast_and_signal_index(routes: FakeApi, fast: HttpSettings, clock: ManualClock) -> None:
    src = source(routes, fast, clock)
    grid = src.forecast(horizon_hours=1)
    assert grid.series.start_s == ts("2024-03-14T11:00")
    assert grid.series.end_s == ts("2024-03-14T12:00")
    assert grid.series.value_at(ts("2024-03-14T11:12")) == pytest.approx(800.0 * 0.45359237)
    assert routes.hits("/v3/forecast")[0].query["horizon_hours"] == "1"
    index = src.signal_index()
    assert (index.time_s, index.percentile) == (ts("2024-03-14T11:00"), 37.1)


def test_intensity_fills_the_reporting_lag_from_the_forecast(
    routes: FakeApi, fast: HttpSettings, clock: ManualClock
) -> None:
    start, end = ts("2024-03-14T10:30"), ts("2024-03-14T11:07")
    grid = source(routes, fast, clock).intensity(start, end)
    assert grid.series.covers(start, end)
    assert grid.series.value_at(ts("2024-03-14T11:06")) == pytest.approx(805.0 * 0.45359237)
    assert grid.provenance.source == "WattTime API v3 (co2_moer, historical + current forecast)"


def test_intensity_names_the_gap(routes: FakeApi, fast: HttpSettings, clock: ManualClock) -> None:
    clock.advance(86400.0)  # long after: no forecast fill
    with pytest.raises(ConfigError) as info:
        source(routes, fast, clock).intensity(ts("2024-03-14T10:00"), ts("2024-03-14T12:00"))
    assert str(info.value) == (
        "WattTime has no co2_moer data for CAISO_NORTH from 2024-03-14 11:00 UTC to "
        "2024-03-14 12:00 UTC (asked for 2024-03-14 10:00 UTC to 2024-03-14 12:00 UTC)"
    )
    assert routes.hits("/v3/forecast") == []


def test_average_signal_is_labelled_average(
    routes: FakeApi, fast: HttpSettings, clock: ManualClock
) -> None:
    body = load("watttime_historical.json")
    body["meta"]["signal_type"] = "co2_aoer"
    routes.route("/v3/historical", body)
    grid = source(routes, fast, clock, signal_type="co2_aoer").historical(
        ts("2024-03-14T09:00"), ts("2024-03-14T09:30")
    )
    assert grid.provenance.kind == "average"
    assert routes.hits("/v3/historical")[0].query["signal_type"] == "co2_aoer"


def test_unexpected_units_are_refused(
    routes: FakeApi, fast: HttpSettings, clock: ManualClock
) -> None:
    body = load("watttime_historical.json")
    body["meta"]["units"] = "kg_co2_per_mwh"
    routes.route("/v3/historical", body)
    with pytest.raises(IntensityApiError, match="units 'kg_co2_per_mwh'"):
        source(routes, fast, clock).historical(ts("2024-03-14T09:00"), ts("2024-03-14T09:30"))


def test_health_damage_is_not_an_intensity() -> None:
    with pytest.raises(ConfigError, match="co2_moer, co2_aoer"):
        WattTimeSource("CAISO_NORTH", token="t", signal_type="health_damage")


def test_refused_given_token_without_credentials(
    routes: FakeApi, fast: HttpSettings, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GREENML_WATTTIME_USERNAME", raising=False)
    monkeypatch.delenv("GREENML_WATTTIME_PASSWORD", raising=False)
    routes.route("/v3/signal-index", Reply({"error": "expired"}, 401))
    src = WattTimeSource("CAISO_NORTH", token="old", base_url=routes.url, http=fast, clock=clock)
    with pytest.raises(IntensityApiError) as info:
        src.signal_index()
    assert str(info.value) == (
        "WattTime: 401 Unauthorized on /v3/signal-index "
        "— the token given to WattTimeSource was refused (tokens last 30 minutes)"
    )
    assert routes.hits("/login") == []

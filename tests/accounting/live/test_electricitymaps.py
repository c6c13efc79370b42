from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pytest

from greenml.accounting.live import ElectricityMapsSource, HttpSettings, IntensityApiError
from greenml.errors import ConfigError
from tests.accounting.live.conftest import FakeApi, Reply, load

TOKEN = "em-t0ken-abc123"
HOUR = 3600.0


def ts(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


NOW = ts("2024-03-14T12:20")  # inside the hour of the latest figure


def source(api: FakeApi, fast: HttpSettings, **kwargs: object) -> ElectricityMapsSource:
    kwargs.setdefault("token", TOKEN)
    return ElectricityMapsSource(
        "DE",
        base_url=api.url + "/v3",
        http=fast,
        clock=lambda: NOW,
        **kwargs,  # type: ignore[arg-type]
    )


def test_latest_sends_token_and_never_guesses_the_zone(api: FakeApi, fast: HttpSettings) -> None:
    api.route("/v3/carbon-intensity/latest", load("electricitymaps_latest.json"))
    grid = source(api, fast).latest()
    assert grid.series.value_at(ts("2024-03-14T12:30")) == 302.0
    assert grid.series.start_s == ts("2024-03-14T12:00")
    assert grid.series.end_s == ts("2024-03-14T13:00")
    (request,) = api.hits("/v3/carbon-intensity/latest")
    assert request.headers["auth-token"] == TOKEN
    assert request.query == {
        "zone": "DE",
        "emissionFactorType": "lifecycle",
        "shouldUseFallbackCallerLookup": "false",
    }
    p = grid.provenance
    assert (p.location, p.resolution, p.kind, p.scope) == ("DE", "live", "average", "lifecycle")
    assert p.source == "Electricity Maps API v3 (carbon-intensity/latest)"


def test_history_is_hourly_and_counts_estimates(api: FakeApi, fast: HttpSettings) -> None:
    api.route("/v3/carbon-intensity/history", load("electricitymaps_history.json"))
    grid = source(api, fast).history()
    series = grid.series
    assert len(series.times_s) == 24
    assert series.start_s == ts("2024-03-13T12:00")
    assert series.end_s == ts("2024-03-14T12:00")
    assert np.all(np.diff(series.times_s) == HOUR)
    assert series.values[0] == 412.0 and series.values[-1] == 288.0
    assert grid.provenance.resolution == "hourly"
    assert "2 of 24 hourly values in the provider's data were estimated to fill gaps" in (
        grid.provenance.source
    )


def test_forecast(api: FakeApi, fast: HttpSettings) -> None:
    api.route("/v3/carbon-intensity/forecast", load("electricitymaps_forecast.json"))
    grid = source(api, fast).forecast()
    assert grid.series.start_s == ts("2024-03-14T12:00")
    assert grid.series.value_at(ts("2024-03-14T17:59")) == 250.0
    assert "forecast" in grid.provenance.source


def test_forecast_not_in_plan(api: FakeApi, fast: HttpSettings) -> None:
    api.route("/v3/carbon-intensity/forecast", Reply({"message": "Forbidden"}, 403))
    with pytest.raises(IntensityApiError, match="403 Forbidden on /v3/carbon-intensity/forecast"):
        source(api, fast).forecast()


def test_recent_span_uses_history_then_latest_for_the_current_hour(
    api: FakeApi, fast: HttpSettings
) -> None:
    api.route("/v3/carbon-intensity/history", load("electricitymaps_history.json"))
    api.route("/v3/carbon-intensity/latest", load("electricitymaps_latest.json"))
    start, end = ts("2024-03-14T10:30"), ts("2024-03-14T12:15")
    grid = source(api, fast).intensity(start, end)
    assert grid.series.covers(start, end)
    # 10:30-11:00 at 270, 11:00-12:00 at 288, 12:00-12:15 at 302 (latest)
    expected = (0.5 * 270 + 1.0 * 288 + 0.25 * 302) / 1.75
    assert grid.series.mean(start, end) == pytest.approx(expected)
    assert len(api.hits("/v3/carbon-intensity/past-range")) == 0
    assert grid.provenance.source.startswith("Electricity Maps API v3 (carbon-intensity/history")
    assert "latest" in grid.provenance.source
    assert grid.provenance.resolution == "hourly"


def test_span_inside_the_current_hour_uses_latest_only(api: FakeApi, fast: HttpSettings) -> None:
    api.route("/v3/carbon-intensity/latest", load("electricitymaps_latest.json"))
    grid = source(api, fast).intensity(ts("2024-03-14T12:01"), ts("2024-03-14T12:19"))
    assert grid.series.mean(ts("2024-03-14T12:01"), ts("2024-03-14T12:19")) == 302.0
    assert grid.provenance.resolution == "live"
    assert [r.path for r in api.requests] == ["/v3/carbon-intensity/latest"]


def test_older_span_uses_past_range(api: FakeApi, fast: HttpSettings) -> None:
    api.route("/v3/carbon-intensity/past-range", load("electricitymaps_past_range.json"))
    start, end = ts("2024-03-01T06:30"), ts("2024-03-01T09:00")
    grid = source(api, fast).intensity(start, end)
    (request,) = api.hits("/v3/carbon-intensity/past-range")
    assert request.query["start"] == "2024-03-01T06:00:00Z"  # floored to the hour
    assert request.query["end"] == "2024-03-01T09:00:00Z"
    assert request.headers["auth-token"] == TOKEN
    expected = (0.5 * 500 + 540 + 560) / 2.5
    assert grid.series.mean(start, end) == pytest.approx(expected)
    assert "past-range" in grid.provenance.source


def test_long_past_span_is_asked_in_ten_day_pieces(api: FakeApi, fast: HttpSettings) -> None:
    api.route("/v3/carbon-intensity/past-range", {"zone": "DE", "data": []})
    with pytest.raises(ConfigError):
        source(api, fast).intensity(ts("2024-01-01T00:00"), ts("2024-01-25T00:00"))
    starts = [r.query["start"] for r in api.hits("/v3/carbon-intensity/past-range")]
    assert starts == ["2024-01-01T00:00:00Z", "2024-01-11T00:00:00Z", "2024-01-21T00:00:00Z"]


def test_span_before_the_data_names_the_gap(api: FakeApi, fast: HttpSettings) -> None:
    api.route("/v3/carbon-intensity/past-range", load("electricitymaps_past_range.json"))
    with pytest.raises(ConfigError) as info:
        source(api, fast).intensity(ts("2024-02-29T22:00"), ts("2024-03-01T02:00"))
    assert str(info.value) == (
        "Electricity Maps has no lifecycle carbon-intensity data for DE from "
        "2024-02-29 22:00 UTC to 2024-03-01 00:00 UTC "
        "(asked for 2024-02-29 22:00 UTC to 2024-03-01 02:00 UTC)"
    )


def test_missing_hours_inside_the_span_are_a_gap_not_held_over(
    api: FakeApi, fast: HttpSettings
) -> None:
    body = load("electricitymaps_past_range.json")
    body["data"][8]["carbonIntensity"] = None  # 08:00 without data
    del body["data"][9]  # 09:00 absent
    api.route("/v3/carbon-intensity/past-range", body)
    with pytest.raises(ConfigError, match="from 2024-03-01 08:00 UTC to 2024-03-01 10:00 UTC"):
        source(api, fast).intensity(ts("2024-03-01T06:00"), ts("2024-03-01T12:00"))


def test_direct_factors_are_asked_for_and_labelled(api: FakeApi, fast: HttpSettings) -> None:
    body = load("electricitymaps_latest.json")
    body["emissionFactorType"] = "direct"
    api.route("/v3/carbon-intensity/latest", body)
    grid = source(api, fast, emission_factor_type="direct").latest()
    assert grid.provenance.scope == "direct"
    assert api.requests[0].query["emissionFactorType"] == "direct"


def test_answer_with_other_factors_is_refused(api: FakeApi, fast: HttpSettings) -> None:
    api.route("/v3/carbon-intensity/latest", load("electricitymaps_latest.json"))
    with pytest.raises(IntensityApiError, match="lifecycle factors, asked for direct"):
        source(api, fast, emission_factor_type="direct").latest()


def test_401_is_not_retried_and_never_shows_the_token(
    api: FakeApi, fast: HttpSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GREENML_ELECTRICITYMAPS_TOKEN", TOKEN)
    api.route("/v3/carbon-intensity/latest", Reply({"message": f"bad token {TOKEN}"}, 401))
    src = ElectricityMapsSource("DE", base_url=api.url + "/v3", http=fast)
    with pytest.raises(IntensityApiError) as info:
        src.latest()
    assert str(info.value) == (
        "Electricity Maps: 401 Unauthorized on /v3/carbon-intensity/latest "
        "— check GREENML_ELECTRICITYMAPS_TOKEN"
    )
    assert len(api.requests) == 1
    assert TOKEN not in repr(src)


def test_no_token_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GREENML_ELECTRICITYMAPS_TOKEN", raising=False)
    with pytest.raises(ConfigError, match="GREENML_ELECTRICITYMAPS_TOKEN"):
        ElectricityMapsSource("DE")


def test_unknown_factor_type_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="lifecycle or direct"):
        ElectricityMapsSource("DE", token=TOKEN, emission_factor_type="marginal")


def test_answer_for_another_zone_is_refused(api: FakeApi, fast: HttpSettings) -> None:
    body = load("electricitymaps_latest.json")
    body["zone"] = "FR"
    api.route("/v3/carbon-intensity/latest", body)
    with pytest.raises(IntensityApiError, match="data for zone FR, asked for DE"):
        source(api, fast).latest()

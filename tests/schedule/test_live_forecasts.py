"""Live forecasts for planning: each provider answers ``forecast_span(start, end)``."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from greenml.accounting.live import UkCarbonIntensitySource, WattTimeSource
from greenml.cli import main
from greenml.errors import ConfigError
from greenml.schedule import sources
from tests.accounting.live.conftest import FakeApi, load
from tests.helpers import ManualClock


def ts(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def test_watttime_asks_for_a_horizon_that_reaches_the_deadline(api: FakeApi, fast: object) -> None:
    api.route("/login", load("watttime_login.json"))
    api.route("/v3/forecast", load("watttime_forecast.json"))
    clock = ManualClock(ts("2024-03-14T11:08"))
    src = WattTimeSource(
        "CAISO_NORTH", username="u", password="p", base_url=api.url, http=fast, clock=clock
    )  # type: ignore[arg-type]
    grid = src.forecast_span(clock(), clock() + 5.5 * 3600)
    assert api.hits("/v3/forecast")[0].query["horizon_hours"] == "6"
    assert "forecast" in grid.provenance.source
    src.forecast_span(clock(), clock() + 30 * 86400)  # capped at what WattTime serves
    assert api.hits("/v3/forecast")[1].query["horizon_hours"] == "72"


def test_uk_carbon_intensity_answers_the_window_itself(api: FakeApi, fast: object) -> None:
    api.route(
        "/intensity/2024-03-14T08:00Z/2024-03-14T12:00Z", load("ukci_intensity_range.json")
    )
    src = UkCarbonIntensitySource(base_url=api.url, http=fast)  # type: ignore[arg-type]
    grid = src.forecast_span(ts("2024-03-14T08:10"), ts("2024-03-14T11:50"))
    assert grid.series.covers(ts("2024-03-14T08:10"), ts("2024-03-14T11:50"))


def test_unknown_provider_and_missing_credentials_are_clear(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ConfigError, match="known: electricitymaps, watttime, ukci"):
        sources.live_forecast("DE", "tomorrowsweather", 0.0, 3600.0)
    monkeypatch.delenv("GREENML_WATTTIME_USERNAME", raising=False)
    monkeypatch.delenv("GREENML_WATTTIME_PASSWORD", raising=False)
    code = main(["plan", "job", "--duration", "2h", "--deadline", "+12h", "--zone", "CAISO_NORTH",
                 "--intensity-provider", "watttime"])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "WattTime needs a username and password" in err and err.count("\n") == 1

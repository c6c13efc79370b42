from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pytest

from greenml.accounting.live import HttpSettings, IntensityApiError, UkCarbonIntensitySource
from greenml.errors import ConfigError
from tests.accounting.live.conftest import FakeApi, Reply, load


def ts(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


START, END = ts("2024-03-14T08:10"), ts("2024-03-14T11:50")
RANGE = "2024-03-14T08:00Z/2024-03-14T12:00Z"


def test_national_latest_uses_the_actual_figure(api: FakeApi, fast: HttpSettings) -> None:
    api.route("/intensity", load("ukci_intensity.json"))
    grid = UkCarbonIntensitySource(base_url=api.url, http=fast).latest()
    assert grid.series.start_s == ts("2024-03-14T11:30")
    assert grid.series.end_s == ts("2024-03-14T12:00")
    assert grid.series.values.tolist() == [175.0]  # actual, not the 180 forecast
    p = grid.provenance
    assert p.source == "Carbon Intensity API, NESO (carbonintensity.org.uk), actual"
    assert (p.location, p.resolution, p.kind, p.scope) == ("GB", "live", "average", "direct")


def test_national_range_uses_actual_where_published(api: FakeApi, fast: HttpSettings) -> None:
    api.route(f"/intensity/{RANGE}", load("ukci_intensity_range.json"))
    grid = UkCarbonIntensitySource(base_url=api.url, http=fast).intensity(START, END)
    series = grid.series
    assert series.covers(START, END)
    assert np.all(np.diff(series.times_s) == 1800.0)
    assert series.values.tolist() == [186, 185, 182, 184, 179, 176, 178, 176]
    assert grid.provenance.resolution == "sub-hourly"
    assert grid.provenance.source.endswith("actual for 6 of 8 half-hours, forecast for the rest")
    assert len(api.requests) == 1


def test_regional_by_postcode(api: FakeApi, fast: HttpSettings) -> None:
    api.route(
        f"/regional/intensity/{RANGE}/postcode/RG10", load("ukci_regional_range_postcode.json")
    )
    src = UkCarbonIntensitySource(postcode="rg10 6bt", base_url=api.url, http=fast)
    grid = src.intensity(START, END)
    assert grid.series.values.tolist() == [140, 138, 133, 129, 126, 124, 121, 119]
    assert grid.provenance.location == "GB postcode RG10 (South England)"
    assert grid.provenance.source.endswith(", forecast")


def test_regional_latest_by_postcode(api: FakeApi, fast: HttpSettings) -> None:
    api.route("/regional/postcode/RG10", load("ukci_regional_postcode.json"))
    grid = UkCarbonIntensitySource(postcode="RG10", base_url=api.url, http=fast).latest()
    assert grid.series.values.tolist() == [126.0]
    assert grid.series.start_s == ts("2024-03-14T11:30")
    assert grid.provenance.source.endswith(", forecast")


def test_regional_by_region_id(api: FakeApi, fast: HttpSettings) -> None:
    api.route(f"/regional/intensity/{RANGE}/regionid/13", load("ukci_regional_range_regionid.json"))
    grid = UkCarbonIntensitySource(region_id=13, base_url=api.url, http=fast).intensity(START, END)
    assert grid.series.mean(ts("2024-03-14T08:00"), ts("2024-03-14T09:00")) == 207.5
    assert grid.provenance.location == "GB region 13 (London)"


def test_missing_half_hours_name_the_gap(api: FakeApi, fast: HttpSettings) -> None:
    body = load("ukci_intensity_range.json")
    body["data"][3]["intensity"] = {"forecast": None, "actual": None, "index": None}
    api.route(f"/intensity/{RANGE}", body)
    with pytest.raises(ConfigError) as info:
        UkCarbonIntensitySource(base_url=api.url, http=fast).intensity(START, END)
    assert str(info.value) == (
        "Carbon Intensity API (GB) has no data for GB from 2024-03-14 09:30 UTC to "
        "2024-03-14 10:00 UTC (asked for 2024-03-14 08:10 UTC to 2024-03-14 11:50 UTC)"
    )


def test_long_spans_are_asked_in_fourteen_day_pieces(api: FakeApi, fast: HttpSettings) -> None:
    with pytest.raises(IntensityApiError):
        UkCarbonIntensitySource(base_url=api.url, http=fast).intensity(
            ts("2024-01-01T00:00"), ts("2024-01-20T00:00")
        )
    assert api.requests[0].path == "/intensity/2024-01-01T00:00Z/2024-01-15T00:00Z"


def test_bad_request_shows_the_api_message(api: FakeApi, fast: HttpSettings) -> None:
    api.route(f"/intensity/{RANGE}", Reply(load("ukci_error_400.json"), 400))
    with pytest.raises(IntensityApiError) as info:
        UkCarbonIntensitySource(base_url=api.url, http=fast).intensity(START, END)
    assert str(info.value).startswith(
        f"Carbon Intensity API (GB): 400 Bad Request on /intensity/{RANGE} — Please enter a valid"
    )
    assert len(api.requests) == 1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"postcode": "RG10", "region_id": 12}, "not both"),
        ({"postcode": "12345"}, "not an outward GB postcode"),
        ({"region_id": 18}, "1–17"),
    ],
)
def test_bad_location_is_a_config_error(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        UkCarbonIntensitySource(**kwargs)  # type: ignore[arg-type]

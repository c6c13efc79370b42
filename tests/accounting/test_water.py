"""Water: WUE from the user, a provider or the stated default; off-site water by country."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from greenml.accounting.water import (
    DEFAULT_WUE,
    WUE_MAX_L_PER_KWH,
    country_of,
    offsite_water,
    water_block,
    wue_for,
)
from greenml.errors import ConfigError


def test_litres_on_site_and_off_site_with_sources() -> None:
    off = offsite_water("FR")
    assert off is not None and off.country == "FRA" and "Macknick" in off.source
    b = water_block(10.0, 12.0, wue_for("0.5"), off, "FR")
    assert b["onsite_l"] == pytest.approx(5.0)
    assert b["offsite_l"] == pytest.approx(12.0 * off.l_per_kwh)
    assert b["litres"] == pytest.approx(5.0 + 12.0 * off.l_per_kwh)
    assert 0 < b["uncertainty_rel"] < 1


def test_default_wue_is_stated_and_unknown_place_is_a_lower_bound() -> None:
    b = water_block(10.0, 10.0, wue_for(None), None, "")
    assert wue_for(None) is DEFAULT_WUE and "default" in str(b["wue_source"])
    assert b["offsite_l"] is None and b["status"] == "partial"
    assert "lower bound" in str(b["note"]) and "--country" in str(b["offsite_reason"])


def test_hydro_heavy_grid_consumes_more_than_a_wind_and_gas_grid() -> None:
    norway, britain = offsite_water("Norway"), offsite_water("GB")
    assert norway is not None and britain is not None
    assert norway.l_per_kwh > 5 * britain.l_per_kwh
    assert norway.uncertainty_rel > britain.uncertainty_rel  # hydro is the least certain


def test_places_of_zones_and_regions() -> None:
    assert country_of("US-CAL-CISO") == "US"
    assert country_of("Johannesburg") == "ZA"
    assert offsite_water("Iowa") is not None
    assert offsite_water("Atlantis") is None


def test_provider_wue() -> None:
    assert wue_for("aws").l_per_kwh == pytest.approx(0.18)
    assert "Microsoft" in wue_for("Microsoft").source
    with pytest.raises(ConfigError, match="provider that publishes one"):
        wue_for("gcp")


@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(str), st.text(max_size=12)))
def test_wue_text_is_plausible_or_refused(text: str) -> None:
    try:
        wue = wue_for(text)
    except ConfigError as exc:
        assert "\n" not in str(exc)
        return
    assert math.isfinite(wue.l_per_kwh) and 0 <= wue.l_per_kwh <= WUE_MAX_L_PER_KWH


def test_a_personal_machine_has_no_on_site_water_unless_a_wue_is_given() -> None:
    from greenml.accounting.footprint import prepare_footprint
    from greenml.accounting.pue import DEFAULT_PUE

    carbon = {"pue": 1.0, "pue_source": DEFAULT_PUE["personal"].source,
              "facility_energy_kwh": 2.0}  # fmt: skip
    blocks = prepare_footprint(country="DE").blocks(
        it_kwh=2.0, carbon=carbon, devices=[], machine_hours=1.0, year=2024
    )
    water = blocks["water"]
    assert water["onsite_l"] == 0.0 and "personal machine" in water["wue_source"]
    assert water["offsite_l"] > 0 and water["litres"] == water["offsite_l"]
    given = prepare_footprint(country="DE", wue="0.5").blocks(
        it_kwh=2.0, carbon=carbon, devices=[], machine_hours=1.0, year=2024
    )
    assert given["water"]["onsite_l"] == pytest.approx(1.0)
    datacenter = {**carbon, "pue": 1.58, "pue_source": DEFAULT_PUE["datacenter"].source}
    default = prepare_footprint(country="DE").blocks(
        it_kwh=2.0, carbon=datacenter, devices=[], machine_hours=1.0, year=2024
    )
    assert default["water"]["onsite_l"] == pytest.approx(2.0 * 1.8)

"""A provider's price export (AWS spot price history) as an instance price table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from greenml.accounting.instances import instance_price, load_table
from greenml.accounting.price_export import parse_export
from greenml.errors import ConfigError

HISTORY = {"SpotPriceHistory": [
    {"AvailabilityZone": "us-east-1a", "InstanceType": "g6e.xlarge",
     "ProductDescription": "Linux/UNIX", "SpotPrice": "0.80", "Timestamp": "2026-11-20T10:00:00Z"},
    {"AvailabilityZone": "us-east-1b", "InstanceType": "g6e.xlarge",
     "ProductDescription": "Linux/UNIX", "SpotPrice": "1.00", "Timestamp": "2026-11-22T10:00:00Z"},
    {"AvailabilityZone": "us-west-2a", "InstanceType": "p5.48xlarge",
     "ProductDescription": "Linux/UNIX", "SpotPrice": "40.5", "Timestamp": "2026-11-21T00:00:00Z"},
]}  # fmt: skip


def test_spot_prices_are_averaged_per_type_and_region_with_source_and_date(
    tmp_path: Path,
) -> None:
    export = tmp_path / "spot.json"
    export.write_text(json.dumps(HISTORY))
    price = instance_price("g6e.xlarge", spot=True, table=export)
    assert price.spot_usd_per_h == pytest.approx(0.90) and price.region == "us-east-1"
    assert price.on_demand_usd_per_h == 1.861  # the packaged list price beside it
    assert "2 AWS spot price(s) in spot.json" in price.spot_source
    assert price.spot_date == "2026-11-20/2026-11-22"
    cost = price.to_dict(7200.0)
    assert cost["usd"] == pytest.approx(1.80)
    assert cost["spot_saving_usd"] == pytest.approx(2 * (1.861 - 0.90))
    assert cost["spot_saving_rel"] == pytest.approx(1 - 0.90 / 1.861)
    assert cost["spot_source"] == price.spot_source
    assert [r.instance_type for r in load_table(export)] == ["g6e.xlarge", "p5.48xlarge"]


def test_an_on_demand_run_states_no_spot_saving() -> None:
    cost = instance_price("g6e.xlarge").to_dict(3600.0)
    assert "spot_saving_usd" not in cost
    spot = instance_price("g6e.xlarge", spot=True).to_dict(3600.0)
    assert spot["spot_saving_usd"] == pytest.approx(1.861 - 0.7945)
    assert "SkyPilot catalog" in spot["spot_source"] and spot["spot_date"] == "2025"


ITEM = st.fixed_dictionaries({
    "AvailabilityZone": st.one_of(st.sampled_from(["us-east-1a", "eu-west-3c", "x"]), st.none()),
    "InstanceType": st.one_of(st.sampled_from(["g6e.xlarge", " "]), st.integers()),
    "SpotPrice": st.one_of(st.floats(allow_nan=True), st.text(max_size=6), st.booleans()),
    "Timestamp": st.one_of(st.just("2026-11-20T10:00:00Z"), st.text(max_size=6)),
})  # fmt: skip


@given(st.one_of(st.fixed_dictionaries({"SpotPriceHistory": st.lists(ITEM, max_size=4)}),
                 st.lists(st.integers(), max_size=2), st.none(), st.text(max_size=5)))
def test_any_export_gives_rows_or_one_line(data: object) -> None:
    try:
        rows = parse_export(data, "f.json")
    except ConfigError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("f.json")
        return
    assert rows
    for _, region, mean, count, _, first, last in rows:
        assert mean >= 0 and count >= 1 and first <= last and region.count("-") >= 2


def test_a_file_that_is_not_json_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "spot.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="is not JSON"):
        load_table(bad)


def test_the_run_summary_says_what_spot_saved() -> None:
    from greenml.cli.render import cost_lines

    instance = instance_price("g6e.xlarge", spot=True).to_dict(7200.0)
    text = "\n".join(cost_lines({"status": "unknown", "usd": None, "instance": instance}))
    assert "spot saved $2.13 (57 %) against on-demand $1.86/h" in text

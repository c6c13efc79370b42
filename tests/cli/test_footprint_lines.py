"""The run summary's footprint lines: water split into on-site and off-site, with units."""

from __future__ import annotations

from greenml.cli.render import footprint_lines


def test_water_says_both_parts_in_a_unit_that_fits() -> None:
    (line,) = footprint_lines({"water": {
        "litres": 0.000479, "onsite_l": 0.000238, "offsite_l": 0.000241,
        "wue_l_per_kwh": 1.8, "uncertainty_rel": 0.4}})  # fmt: skip
    # ±40 %: two significant figures (the one rule of greenml.quantities)
    assert line == ("water: 0.48 mL ±40 % (on-site 0.24 mL at WUE 1.8 L/kWh; "
                    "off-site 0.24 mL (generation))")  # fmt: skip


def test_water_without_the_off_site_part_is_a_lower_bound() -> None:
    (line,) = footprint_lines({"water": {"litres": 2.5, "onsite_l": 2.5, "offsite_l": None,
                                         "wue_l_per_kwh": 0.18}})  # fmt: skip
    assert line == (  # no uncertainty given: three significant figures
        "water: 2.50 L (on-site 2.50 L at WUE 0.18 L/kWh; off-site unknown: a lower bound)"
    )


def test_a_machine_without_cooling_water_says_so() -> None:
    (line,) = footprint_lines({"water": {"litres": 6.7e-05, "onsite_l": 0.0, "offsite_l": 6.7e-05,
                                         "wue_l_per_kwh": 0.0, "uncertainty_rel": 0.52}})
    assert line == ("water: 0.067 mL ±52 % (no on-site cooling water; "
                    "off-site 0.067 mL (generation))")


def test_market_based_carbon_and_counted_work_carry_their_uncertainty() -> None:
    lines = footprint_lines({
        "carbon_market": {"status": "ok", "kg": 0.0135, "basis": "location-fallback",
                          "uncertainty_rel": 0.25},
        "flops": {"flops": 3.2e15, "method": "counted", "uncertainty_rel": 0.02, "mfu": 0.41},
    })  # fmt: skip
    assert lines[0].startswith("carbon, market-based: ") and "±25 %" in lines[0]
    assert lines[1] == "work: 3.2e+15 FLOPs ±2.0 % counted · MFU 41.0%"

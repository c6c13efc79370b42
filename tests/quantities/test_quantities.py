"""The one quantities module: one rounding rule, units that scale, no exponent for ordinary
figures, and every place that prints a figure prints it the same way."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

import greenml.quantities as q

ENERGY_NAMES = {u[1] for u in q.ENERGY_UNITS}
MASS_NAMES = {name for _, name in q.MASS_UNITS}
_NUMBER = re.compile(r"^-?[0-9][0-9,]*(\.[0-9]+)?$")


def _value(text: str, ladder: q.Ladder) -> float:
    """The base-unit value a text such as ``14.2 kJ`` stands for."""
    number, unit = text.rsplit(" ", 1)
    return float(number.replace(",", "")) * {u[1]: u[0] for u in ladder}[unit]


@pytest.mark.parametrize(
    ("joules", "shown"),
    [(1e5, "100 kJ"), (51.5, "51.5 J"), (0.0123, "12.3 mJ"), (999.9, "1.00 kJ"),
     (999.4, "999 J"), (4.5e6, "1.25 kWh"), (1e6, "0.278 kWh"), (3.5e5, "350 kJ"),
     (560 * 3.6e6, "560 kWh"), (0.0, "0 J")],
)  # fmt: skip
def test_100_kj_reads_100_kj_and_every_figure_in_the_unit_that_fits(
    joules: float, shown: str
) -> None:
    assert q.energy(joules) == shown


def test_the_figures_follow_the_uncertainty() -> None:
    assert q.energy(123_456.0, uncertainty_rel=0.02) == "123 kJ"  # three when better than ±5 %
    assert q.energy(12_345.0, uncertainty_rel=0.20) == "12 kJ"  # two otherwise
    assert q.energy(41.2, 4.12) == "41 ± 4.1 J"  # a value and its ± share one unit
    assert q.money(600.0, 122.0) == "$600 ± $120"  # a ± has two significant figures
    assert q.digits_for(None) == 2 and q.digits_for(0.01) == 3


@given(st.floats(min_value=1e-6, max_value=1e18))
def test_energy_never_uses_an_exponent_and_reads_back_within_its_rounding(joules: float) -> None:
    text = q.energy(joules)
    number, unit = text.rsplit(" ", 1)
    assert _NUMBER.match(number), text
    assert unit in ENERGY_NAMES
    assert _value(text, q.ENERGY_UNITS) == pytest.approx(joules, rel=5e-3)  # 3 figures


@given(st.floats(min_value=1e-6, max_value=1e12))
def test_mass_never_uses_an_exponent_and_reads_back_within_its_rounding(grams: float) -> None:
    text = q.mass(grams, uncertainty_rel=0.3)
    number, unit = text.rsplit(" ", 1)
    assert _NUMBER.match(number) and unit in MASS_NAMES, text
    assert _value(text, q.MASS_UNITS) == pytest.approx(grams, rel=5e-2)  # 2 figures


@given(st.floats(min_value=1e-6, max_value=1e15), st.floats(min_value=1e-6, max_value=1e15))
def test_energy_is_monotone(a: float, b: float) -> None:
    low, high = sorted((a, b))
    assert _value(q.energy(low), q.ENERGY_UNITS) <= _value(q.energy(high), q.ENERGY_UNITS)


@given(st.floats(min_value=1e-6, max_value=1e15))
def test_units_scale_the_number_shown_stays_below_the_next_unit(joules: float) -> None:
    text = q.energy(joules)
    number, unit = float(text.rsplit(" ", 1)[0].replace(",", "")), text.rsplit(" ", 1)[1]
    sizes = [u[0] for u in q.ENERGY_UNITS]
    starts = [u[2] if len(u) > 2 else u[0] for u in q.ENERGY_UNITS]
    at = [u[1] for u in q.ENERGY_UNITS].index(unit)
    assert starts[at] / sizes[at] <= number < starts[at + 1] / sizes[at], text  # kWh from 0.1


@given(st.floats(min_value=1e-9, max_value=1e9))
def test_money_never_uses_an_exponent(usd: float) -> None:
    text = q.money(usd)
    assert text.startswith("$") and "e" not in text
    assert float(text[1:].replace(",", "")) == pytest.approx(usd, rel=5e-3, abs=0.005)


@given(st.floats(min_value=1e-6, max_value=1e9), st.floats(min_value=1e-4, max_value=0.5))
def test_money_with_its_uncertainty_never_uses_an_exponent(usd: float, rel: float) -> None:
    text = q.money(usd, usd * rel)
    _, _, unc = text.partition(" ± ")
    assert "e" not in text and unc.startswith("$"), text
    assert float(unc[1:].replace(",", "")) == pytest.approx(usd * rel, rel=0.06, abs=0.5), text


@given(st.lists(st.floats(min_value=0.0, max_value=1e12), min_size=1, max_size=30))
def test_money_axis_keeps_the_tallest_bar_between_1_and_1000(usd: list[float]) -> None:
    size, unit = q.money_axis(max(usd))
    tallest = max(usd) / size
    assert tallest == 0 or 1 <= tallest < 1000 or unit in ("µUSD", "MUSD"), (usd, unit)


@given(st.lists(st.floats(min_value=0.0, max_value=1e12), min_size=1, max_size=30))
def test_a_chart_axis_unit_never_leaves_the_tallest_bar_below_one(grams: list[float]) -> None:
    size, unit = q.mass_axis(max(grams))
    tallest = max(grams) / size
    assert unit in MASS_NAMES
    assert tallest == 0 or 1 <= tallest < 1000 or unit == "t" or unit == "µg"


def test_the_dashboards_5e_05_kg_axis_reads_in_milligrams() -> None:
    size, unit = q.mass_axis(0.05)  # 5e-05 kg of CO2eq in a week
    assert (unit, 0.05 / size) == ("mg", pytest.approx(50.0))
    assert q.energy_axis(2.43e-6 * q.J_PER_KWH) == (1.0, "J")


@given(st.floats(min_value=0.0, max_value=10.0))
def test_an_uncertainty_has_two_significant_figures(rel: float) -> None:
    text = q.pm(rel)
    shown = float(text.strip("±% ").replace(",", ""))
    assert shown == pytest.approx(rel * 100, rel=0.05, abs=1e-9)


def test_one_j_per_kwh_constant() -> None:
    from greenml.measure.measurement import JOULES_PER_KWH
    from greenml.report import sigfig

    assert JOULES_PER_KWH is q.J_PER_KWH and sigfig.J_PER_KWH is q.J_PER_KWH
    assert math.isclose(q.J_PER_MWH, 1000 * q.J_PER_KWH)


def test_every_place_prints_100_kj_the_same_way() -> None:
    """The terminal, the report text, the dashboard, the notebook view: one rule."""
    from greenml.cli import render
    from greenml.compress.report import joules
    from greenml.quantities import joules_text
    from greenml.report import sigfig

    assert render.energy(1e5) == joules(1e5) == joules_text(1e5) == q.energy(1e5) == "100 kJ"
    assert sigfig.energy(1e5) == "100 kJ"  # reports round to their uncertainty's figures


@pytest.mark.parametrize("value", [1e29, 1e30, 1.7976931348623157e308, -3.3e200])
def test_a_huge_figure_is_written_not_a_decimal_error(value: float) -> None:
    text = q.sig(value)
    assert text.replace(",", "").lstrip("-")[:2] in {"10", "17", "33"}

"""A price escalation rate: TCO rents and electricity at their mean over the horizon."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from greenml.accounting.escalation import mean_factor, over_years
from greenml.advise.tco import advise_tco
from greenml.advise.tco_inputs import merge
from greenml.errors import ConfigError
from tests.helpers import greenml_cli

H = 4 * 8760.0


def test_rents_and_electricity_rise_by_the_mean_factor() -> None:
    base = dict(gpu="A100 SXM4 40GB", count=8, hardware_usd=200_000.0, pue=1.5, price=0.1,
                power_w=300.0, ci=400.0)  # fmt: skip
    flat = advise_tco(merge(base, {}, None))
    up = advise_tco(merge({**base, "price_escalation": 0.05}, {}, None))
    grow = (1.05**4 - 1) / (4 * math.log(1.05))
    assert up.plan("on-demand").cost_usd(0.5) == pytest.approx(0.5 * H * 32.7726 * grow)
    capex = 200_000.0
    energy_flat = flat.plan("buy").cost_usd(0.5) - capex
    assert up.plan("buy").cost_usd(0.5) - capex == pytest.approx(energy_flat * grow)
    assert "× 1.10" in up.inputs["price_escalation"].source


@given(st.floats(-0.5, 1.0), st.floats(0.1, 30.0))
def test_the_mean_factor_lies_between_today_and_the_horizons_end(rate: float, years: float) -> None:
    factor = mean_factor(rate, years)
    low, high = sorted((1.0, (1 + rate) ** years))
    assert low * (1 - 1e-9) <= factor <= high * (1 + 1e-9)


def test_over_years_and_bad_rates() -> None:
    assert over_years(100.0, 0.0, 3) == 300.0
    assert over_years(100.0, 0.1, 2) == pytest.approx(210.0)
    with pytest.raises(ConfigError):
        mean_factor(2.0, 4)


def test_the_flag_reads_a_percentage() -> None:
    done = greenml_cli("advise", "tco", "--gpu", "H100 SXM", "--hardware-usd", "300000",
                       "--price-escalation", "3%", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert '"price_escalation"' in done.stdout
    bad = greenml_cli("advise", "tco", "--gpu", "H100 SXM", "--hardware-usd", "300000",
                      "--price-escalation", "lots")  # fmt: skip
    assert bad.returncode == 2 and "--price-escalation" in bad.stderr

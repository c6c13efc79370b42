"""Overlapping changes add up on what is left: never more than the parts, nor the footprint."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from greenml.savings.candidate import Candidate, merge
from greenml.savings.combine import combine
from greenml.savings.footprint import Footprint

YEAR = Footprint(("a",), 86400.0, 365.25, gpu_j=8e9, energy_j=10e9, co2_g=3e6, usd=500.0)


def cand(key: str, base: str, share: float, co2: float = 0.0) -> Candidate:
    energy = {"gpu": YEAR.gpu_j, "energy": YEAR.energy_j}.get(base, 0.0) * share
    return Candidate(key, key, base, share, energy, co2 or energy * YEAR.g_per_j,  # type: ignore[arg-type]
                     None, 0.1, "m", (), (), "low", "none", "policy")


def test_two_energy_changes_multiply_on_the_remaining_energy() -> None:
    total = combine([cand("a", "energy", 0.2), cand("b", "energy", 0.1)], YEAR)
    assert total.energy_j == pytest.approx(YEAR.energy_j * (1 - 0.8 * 0.9))
    assert total.marginals[1].energy_j == pytest.approx(YEAR.energy_j * 0.8 * 0.1)


def test_a_carbon_change_acts_on_the_energy_left() -> None:
    total = combine([cand("a", "energy", 0.5), cand("g", "carbon", 0.4, co2=1.2e6)], YEAR)
    assert total.marginals[1].energy_j == 0
    assert total.marginals[1].co2_g == pytest.approx(YEAR.co2_g * 0.5 * 0.4)
    assert total.co2_g == pytest.approx(YEAR.co2_g * (1 - 0.5 * 0.6))


@given(st.lists(st.tuples(st.sampled_from(["gpu", "energy", "carbon"]),
                          st.floats(0.0, 1.0)), max_size=6))  # fmt: skip
def test_the_combined_saving_never_exceeds_the_parts_or_the_footprint(parts: list) -> None:
    ranked = [cand(f"k{n}", base, share, co2=YEAR.co2_g * share if base == "carbon" else 0.0)
              for n, (base, share) in enumerate(parts)]  # fmt: skip
    total = combine(ranked, YEAR)
    assert -1e-6 <= total.co2_g <= YEAR.co2_g * (1 + 1e-9)
    assert total.energy_j <= YEAR.energy_j * (1 + 1e-9)
    assert total.co2_g <= sum(c.co2_g for c in ranked) + 1e-6
    assert sum(m.co2_g for m in total.marginals) == pytest.approx(total.co2_g, abs=1e-3)


def test_a_power_limit_and_a_clock_lock_on_one_gpu_are_one_decision() -> None:
    limit = cand("gpu-power:A100", "energy", 0.2)
    clocks = cand("gpu-power:A100", "energy", 0.1)
    merged = merge([limit, clocks, cand("idle-gpu", "gpu", 0.1)])
    assert len(merged) == 2 and merged[0].share == 0.2

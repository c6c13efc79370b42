"""Adding several changes up without counting a joule twice.

The candidates are applied one after the other, in rank order, to what is left:

- a ``gpu`` change cuts its share of the GPU energy **as first found**, taken from
  the GPU energy left (never more than is left);
- an ``energy`` change cuts its share of the energy left (GPU energy included);
- a ``carbon`` change cuts its share of the intensity left: CO2eq = energy left ×
  intensity × Π(1 − carbon shares);
- a ``cost`` change saves its money on its own (no kWh, no CO2eq).

So the combined saving is multiplicative on the remaining footprint, and each
change's *marginal* saving (what it adds after those ranked above) is what the
plan's total sums. The total's uncertainty adds the marginal savings' absolute
uncertainties in quadrature (each rests on its own evidence).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from greenml.savings.candidate import Candidate
from greenml.savings.footprint import Footprint


@dataclass(frozen=True)
class Marginal:
    """What one candidate adds after those ranked above it (J, g, USD per year)."""

    energy_j: float
    co2_g: float
    usd: float | None


@dataclass(frozen=True)
class Combined:
    """The plan's total saving per year, and each candidate's marginal part."""

    energy_j: float
    co2_g: float
    usd: float | None
    co2_uncertainty_g: float
    marginals: tuple[Marginal, ...]


def combine(ranked: Sequence[Candidate], year: Footprint) -> Combined:
    """Apply ``ranked`` in order to the yearly footprint (see the module notes)."""
    gpu_left, energy_left, carbon_factor = year.gpu_j, year.energy_j, 1.0
    price = year.usd_per_j
    co2_before = year.energy_j * year.g_per_j
    marginals, spread = [], 0.0
    for c in ranked:
        e0, k0 = energy_left, carbon_factor
        if c.base == "gpu":
            cut = min(gpu_left, c.share * year.gpu_j)
            gpu_left -= cut
            energy_left -= cut
        elif c.base == "energy":
            cut = c.share * energy_left
            gpu_left *= 1.0 - c.share
            energy_left -= cut
        elif c.base == "carbon":
            carbon_factor *= 1.0 - c.share
        saved_j = e0 - energy_left
        saved_g = e0 * k0 * year.g_per_j - energy_left * carbon_factor * year.g_per_j
        money = c.usd if c.base == "cost" else (None if price is None else saved_j * price)
        marginals.append(Marginal(saved_j, saved_g, money))
        spread += (saved_g * c.uncertainty_rel) ** 2
    co2_after = energy_left * carbon_factor * year.g_per_j
    usd_parts = [m.usd for m in marginals]
    usd = None if any(u is None for u in usd_parts) and price is None else sum(
        u or 0.0 for u in usd_parts)  # fmt: skip
    return Combined(year.energy_j - energy_left, co2_before - co2_after, usd,
                    math.sqrt(spread), tuple(marginals))  # fmt: skip

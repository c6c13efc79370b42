"""How far an estimate may be off: the spread of each assumption it rests on.

An estimate is a model, so its figures carry the spread of their inputs,
combined in quadrature (independent errors):

- power: TDP × utilization is the same kind of model as greenml's CPU power
  model, whose stated spread is ±30 % (:data:`POWER_MODEL_REL`); an average
  power the user measured on a similar job carries ±10 %
  (:data:`POWER_GIVEN_REL`: the job it came from is not this one);
- time from FLOPs: a given MFU carries ±20 % (:data:`MFU_GIVEN_REL`: run-to-run
  and model-to-model spread at one setting). Without an MFU the device runs
  at its peak, so the time and energy are a *lower bound*, said as such;
- carbon: the intensity's own spread for a figure of this time resolution over
  a job this long (:func:`greenml.accounting.carbon.intensity_uncertainty`);
  a figure the user gave is taken as exact;
- cost: the energy's spread (the price is given, so exact).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

POWER_MODEL_REL = 0.30
POWER_GIVEN_REL = 0.10
MFU_GIVEN_REL = 0.20


@dataclass(frozen=True)
class Spread:
    """Relative 1σ-like spreads of an estimate's figures, and whether energy is a lower bound."""

    energy_rel: float
    co2_rel: float | None
    lower_bound: bool
    basis: str

    def to_json(self) -> dict[str, object]:
        return {"energy_uncertainty_rel": self.energy_rel, "co2_uncertainty_rel": self.co2_rel,
                "lower_bound": self.lower_bound, "uncertainty_basis": self.basis}  # fmt: skip


def spread_of(
    *, power_given: bool, mode: str, mfu_given: bool, intensity_rel: float | None
) -> Spread:
    """The spread of an estimate from what was given and what was assumed."""
    power = POWER_GIVEN_REL if power_given else POWER_MODEL_REL
    parts = [f"power {'given' if power_given else 'TDP × utilization'} ±{power * 100:.0f} %"]
    terms = [power]
    lower = mode != "device-hours" and not mfu_given
    if mode != "device-hours" and mfu_given:
        terms.append(MFU_GIVEN_REL)
        parts.append(f"MFU given ±{MFU_GIVEN_REL * 100:.0f} %")
    if lower:
        parts.append("MFU 1.0 (peak): time and energy are a lower bound")
    energy = math.sqrt(sum(t * t for t in terms))
    co2 = None if intensity_rel is None else math.hypot(energy, intensity_rel)
    if intensity_rel is not None:
        parts.append(f"intensity ±{intensity_rel * 100:.0f} %")
    return Spread(energy, co2, lower, "; ".join(parts))

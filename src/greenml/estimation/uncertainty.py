"""How far an estimate may be off: the spread of each assumption it rests on.

An estimate is a model, so its figures carry the spread of their inputs,
combined in quadrature (independent errors):

- power: TDP × utilization is the same kind of model as greenml's CPU power
  model, whose stated spread is ±30 % (:data:`POWER_MODEL_REL`); an average
  power the user measured on a similar job carries ±10 %
  (:data:`POWER_GIVEN_REL`: the job it came from is not this one);
- time from FLOPs: a given MFU carries ±20 % (:data:`MFU_GIVEN_REL`: run-to-run
  and model-to-model spread at one setting). Without an MFU the device runs
  at its peak, so the *time* is a lower bound. The energy is a lower bound only
  when the power was given too (a measured average): at TDP × utilization the
  power is the model's figure, not a bound, so the energy is neither, and says
  which part bounds what;
- the parts beside the devices (host CPU and memory, idle cluster power, a
  measured total: :mod:`greenml.estimation.parts`) carry their own spreads,
  combined with the devices' in quadrature, weighted by energy;
- carbon: the intensity's own spread for a figure of this time resolution over
  a job this long (:func:`greenml.accounting.carbon.intensity_uncertainty`);
  a figure the user gave is taken as exact;
- cost: the energy's spread (the price is given, so exact).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from greenml.estimation.parts import EnergyPart

POWER_MODEL_REL = 0.30
POWER_GIVEN_REL = 0.10
MFU_GIVEN_REL = 0.20


@dataclass(frozen=True)
class Spread:
    """Relative 1σ-like spreads of an estimate's figures, and which part is a bound.

    Attributes:
        energy_rel: Relative spread of the IT (and facility) energy.
        co2_rel: Relative spread of the CO2eq; None when the intensity is unknown.
        lower_bound: The energy is a lower bound (time at peak × a given power).
        basis: What the spread rests on, one clause per input.
        time_lower_bound: The time is a lower bound (FLOPs at peak, MFU 1.0).
        bounds: In words, which part bounds what (empty when nothing is a bound).
    """

    energy_rel: float
    co2_rel: float | None
    lower_bound: bool
    basis: str
    time_lower_bound: bool = False
    bounds: str = ""

    def to_json(self) -> dict[str, object]:
        return {"energy_uncertainty_rel": self.energy_rel, "co2_uncertainty_rel": self.co2_rel,
                "lower_bound": self.lower_bound, "time_lower_bound": self.time_lower_bound,
                "bounds": self.bounds, "uncertainty_basis": self.basis}  # fmt: skip


TIME_AT_PEAK = "time is a lower bound (FLOPs at peak throughput, MFU 1.0)"


def spread_of(
    *, power_given: bool, mode: str, mfu_given: bool, intensity_rel: float | None,
    device_j: float = 1.0, others: Sequence[EnergyPart] = (),
) -> Spread:  # fmt: skip
    """The spread of an estimate from what was given and what was assumed.

    Args:
        power_given: The device power was given (measured), not TDP × utilization.
        mode: ``device-hours``, ``compute``, ``model-data`` or ``energy``.
        mfu_given: An MFU was given (compute modes).
        intensity_rel: The intensity's spread; None when unknown.
        device_j: The devices' energy (0 in ``energy`` mode).
        others: The parts beside the devices, each with its spread.
    """
    from greenml.estimation.parts import EnergyPart, combined_rel

    parts: list[str] = []
    device_terms: list[float] = []
    time_lower = mode in ("compute", "model-data") and not mfu_given
    if mode != "energy":
        power = POWER_GIVEN_REL if power_given else POWER_MODEL_REL
        parts.append(f"power {'given' if power_given else 'TDP × utilization'} "
                     f"±{power * 100:.0f} %")  # fmt: skip
        device_terms.append(power)
        if mode != "device-hours" and mfu_given:
            device_terms.append(MFU_GIVEN_REL)
            parts.append(f"MFU given ±{MFU_GIVEN_REL * 100:.0f} %")
    device_rel = math.sqrt(sum(t * t for t in device_terms))
    pieces = [EnergyPart("devices", device_j, device_rel, "")] if mode != "energy" else []
    pieces += list(others)
    parts += [p.basis for p in others]
    energy = combined_rel(pieces) if len(pieces) > 1 else (pieces[0].rel if pieces else 0.0)
    lower = time_lower and power_given and not others
    bounds = ""
    if time_lower:
        parts.append(TIME_AT_PEAK)
        bounds = (f"{TIME_AT_PEAK}; the power is given, so the energy is a lower bound"
                  if lower else
                  f"{TIME_AT_PEAK}; the power at TDP × utilization is not a bound, so the "
                  "energy is neither a lower nor an upper bound")  # fmt: skip
        if time_lower and power_given and others:
            bounds = (f"{TIME_AT_PEAK}; the devices' energy (given power) is a lower bound, "
                      "the parts beside them are not bounds")
    co2 = None if intensity_rel is None else math.hypot(energy, intensity_rel)
    if intensity_rel is not None:
        parts.append(f"intensity ±{intensity_rel * 100:.0f} %")
    return Spread(energy, co2, lower, "; ".join(parts), time_lower, bounds)

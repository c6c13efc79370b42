"""How often to checkpoint: Young's and Daly's intervals, published interruption rates.

Young (1974): τ = √(2δM) for checkpoint cost δ and mean time between failures M.
Daly (2006) adds the higher-order terms: τ = √(2δM)·[1 + ⅓√(δ/2M) + (δ/2M)/9] − δ
while δ < 2M, and τ = M beyond. τ counts useful work between two checkpoints.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from datetime import datetime
from functools import cache

from greenml.data import packaged
from greenml.errors import ConfigError


def young_interval_s(checkpoint_cost_s: float, mtbf_s: float) -> float:
    """Young's first-order optimum √(2δM), in seconds."""
    _check(checkpoint_cost_s, mtbf_s)
    return math.sqrt(2.0 * checkpoint_cost_s * mtbf_s)


def daly_interval_s(checkpoint_cost_s: float, mtbf_s: float) -> float:
    """Daly's higher-order optimum, in seconds (M itself when δ ≥ 2M)."""
    _check(checkpoint_cost_s, mtbf_s)
    delta, m = checkpoint_cost_s, mtbf_s
    if delta >= 2.0 * m:
        return m
    ratio = delta / (2.0 * m)
    return math.sqrt(2.0 * delta * m) * (1.0 + math.sqrt(ratio) / 3.0 + ratio / 9.0) - delta


def _check(checkpoint_cost_s: float, mtbf_s: float) -> None:
    if not (checkpoint_cost_s > 0 and math.isfinite(checkpoint_cost_s)):
        raise ConfigError(f"the checkpoint cost must be a positive time, not {checkpoint_cost_s}")
    if not (mtbf_s > 0 and not math.isnan(mtbf_s)):
        raise ConfigError(f"the mean time between interruptions must be > 0, not {mtbf_s}")


@dataclass(frozen=True)
class InterruptionRate:
    """A published default spot interruption rate for one accelerator.

    Attributes:
        accelerator: ``A100``, ``V100``, ``H100``.
        per_hour: Interruptions per instance-hour on workdays.
        weekend_factor: Multiplier for Saturdays and Sundays.
    """

    accelerator: str
    per_hour: float
    weekend_factor: float

    def at(self, when: datetime) -> float:
        """The rate per hour at ``when`` (its weekday decides)."""
        return self.per_hour * (self.weekend_factor if when.weekday() >= 5 else 1.0)

    @property
    def source(self) -> str:
        return "greenml default spot interruption rates (data/spot_interruption_rates.csv)"


@cache
def _rates() -> dict[str, InterruptionRate]:
    path = packaged("spot_interruption_rates.csv")
    text = path.read_text(encoding="utf-8")
    return {
        row["accelerator"].upper(): InterruptionRate(
            row["accelerator"], float(row["interruptions_per_hour"]), float(row["weekend_factor"])
        )
        for row in csv.DictReader(text.splitlines())
    }


def interruption_rate(accelerator: str) -> InterruptionRate:
    """The default rate for an accelerator named like ``A100``, ``nvidia-h100-80gb``.

    Raises:
        ConfigError: No default for that accelerator (the known ones are listed).
    """
    rates = _rates()
    name = accelerator.upper()
    for key, rate in rates.items():
        if key in name:
            return rate
    known = ", ".join(sorted(rates))
    raise ConfigError(
        f"no default interruption rate for {accelerator!r} (known: {known}); "
        "give the rate per hour yourself"
    )

"""What ``compress`` returns: every variant's row, the Pareto front and the recommendation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from greenml.compress.pareto import Recommendation
from greenml.compress.variants import BASELINE, Variant
from greenml.errors import ConfigError

ITEM_NOTE = (
    "an inference is one item (one row of the example batch); latency is per call of the "
    "whole example batch"
)


@dataclass
class CompressionResult:
    """The outcome of :func:`greenml.compress.compress`.

    Attributes:
        variants: The baseline first, then one row per requested technique
            (``ok``, ``skipped`` with the reason, or ``failed`` with the error).
        recommendation: The lowest-energy variant within the accuracy budget.
        max_accuracy_drop_pp: The budget, in percentage points of accuracy.
        batch_size: Items per call of the example batch.
        device: Where the baseline model ran (``cpu``, ``cuda:0`` …).
        rounds: Measurement rounds per variant.
        repeats: Least calls per variant and round.
        min_window_s: Least duration of a variant's window per round.
        threads: Intra-op threads set for the run (``None``: left as they were).
        meter_notes: What the Meter could not measure, or how it fell back.
    """

    variants: list[Variant]
    recommendation: Recommendation
    max_accuracy_drop_pp: float
    batch_size: int
    device: str
    rounds: int
    repeats: int
    min_window_s: float
    threads: int | None = None
    meter_notes: list[str] = field(default_factory=list)

    def variant(self, name: str) -> Variant:
        """The variant of that name (``baseline``, ``int8`` …).

        Raises:
            ConfigError: No variant has that name.
        """
        for v in self.variants:
            if v.name == name:
                return v
        known = ", ".join(v.name for v in self.variants)
        raise ConfigError(f"no variant {name!r} (known: {known})")

    @property
    def baseline(self) -> Variant:
        return self.variant(BASELINE)

    @property
    def pareto(self) -> list[str]:
        """Names of the variants on the accuracy-vs-energy Pareto front."""
        return [v.name for v in self.variants if v.pareto]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: units in the key names, joules and seconds."""
        return {
            "kind": "greenml.compress",
            "max_accuracy_drop_pp": self.max_accuracy_drop_pp,
            "batch_size": self.batch_size,
            "device": self.device,
            "measurement": {
                "rounds": self.rounds,
                "repeats": self.repeats,
                "min_window_s": self.min_window_s,
                "threads": self.threads,
                "inference": ITEM_NOTE,
            },
            "recommendation": self.recommendation.to_dict(),
            "pareto": self.pareto,
            "variants": [v.to_dict() for v in self.variants],
            "meter_notes": list(self.meter_notes),
        }

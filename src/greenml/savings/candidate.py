"""One candidate change: what it saves per year, how sure, on what evidence, and who acts.

A candidate cuts a **share** of one **base** of the project's yearly footprint:

- ``gpu``: the GPU energy (power limits, clocks, idle GPUs, precision);
- ``energy``: all IT energy (facility overhead, a bigger batch);
- ``carbon``: the CO2eq of the energy left (green hours, a cleaner region): no kWh saved;
- ``cost``: the money only (spot capacity): no kWh or CO2eq saved.

The base and share are what :mod:`greenml.savings.combine` needs to add up several
changes without counting the same joule twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from greenml.quantities import J_PER_KWH

Base = Literal["gpu", "energy", "carbon", "cost"]
Action = Literal["policy", "artifact", "advice"]
BASES: tuple[Base, ...] = ("gpu", "energy", "carbon", "cost")


@dataclass(frozen=True)
class Candidate:
    """A change worth making, with its expected yearly saving.

    Attributes:
        key: The decision it is (``gpu-power:NVIDIA A100``): candidates with one key merge.
        title: One line.
        base: The part of the footprint it cuts (see the module notes).
        share: The fraction of that base it cuts (0–1).
        energy_j: Expected IT energy saved per year (J), before combining.
        co2_g: Expected CO2eq saved per year (g).
        usd: Expected money saved per year (USD), ``None`` without a price.
        uncertainty_rel: Relative uncertainty of the saving (1-sigma).
        method: How the figure was obtained, in words.
        evidence_runs: The runs that show it.
        findings: The advisors' findings it rests on (``audit:idle-gpus``, ``diagnose:idle``).
        effort: ``low``, ``medium`` or ``high``.
        risk: What could go wrong (accuracy, time to result, deadline).
        action: ``policy`` (greenml does it), ``artifact`` (a file for review), ``advice``.
        settings: The policy or artifact settings ``apply`` uses.
    """

    key: str
    title: str
    base: Base
    share: float
    energy_j: float
    co2_g: float
    usd: float | None
    uncertainty_rel: float
    method: str
    evidence_runs: tuple[str, ...]
    findings: tuple[str, ...]
    effort: str
    risk: str
    action: Action
    settings: dict[str, Any] = field(default_factory=dict)

    def merged(self, other: Candidate) -> Candidate:
        """One decision of two candidates: the larger saving, the evidence of both."""
        first, second = (self, other) if _size(self) >= _size(other) else (other, self)
        runs = tuple(dict.fromkeys((*first.evidence_runs, *second.evidence_runs)))
        found = tuple(dict.fromkeys((*first.findings, *second.findings)))
        settings = {**second.settings, **first.settings}
        return replace(first, evidence_runs=runs, findings=found, settings=settings)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, kWh and kg added at this edge."""
        return {
            "key": self.key,
            "title": self.title,
            "base": self.base,
            "share": self.share,
            "kwh_per_year": self.energy_j / J_PER_KWH,
            "co2_kg_per_year": self.co2_g / 1000.0,
            "usd_per_year": self.usd,
            "uncertainty_rel": self.uncertainty_rel,
            "method": self.method,
            "evidence_runs": list(self.evidence_runs),
            "findings": list(self.findings),
            "effort": self.effort,
            "risk": self.risk,
            "action": self.action,
            "settings": dict(self.settings),
        }


def _size(c: Candidate) -> tuple[float, float, float]:
    return (c.energy_j, c.co2_g, c.usd or 0.0)


def merge(candidates: list[Candidate]) -> list[Candidate]:
    """Candidates with one ``key`` become one (a power limit and a clock lock on one GPU)."""
    by_key: dict[str, Candidate] = {}
    for c in candidates:
        by_key[c.key] = by_key[c.key].merged(c) if c.key in by_key else c
    return list(by_key.values())

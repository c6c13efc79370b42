"""What a diagnosis found: one ``Finding`` per problem, with what is at stake."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from greenml.quantities import J_PER_KWH as JOULES_PER_KWH

SEVERITIES = ("high", "medium", "low", "info")


def severity_of(share: float) -> str:
    """``high`` from 25 % of the energy at stake, ``medium`` from 10 %, else ``low``."""
    return "high" if share >= 0.25 else "medium" if share >= 0.10 else "low"


@dataclass(frozen=True)
class Finding:
    """One problem in a run, with evidence and what fixing it is worth.

    Attributes:
        kind: ``idle``, ``underused``, ``input-bound``, ``rightsizing``,
            ``location``, ``precision``, ``duty-cycle`` or ``low-mfu``.
        severity: ``high``, ``medium``, ``low`` or ``info``.
        title: One line.
        evidence: What the data shows, in words.
        figures: The numbers behind the evidence (SI units in the key names).
        energy_at_stake_j: Energy per run that the fix could save (IT energy).
        usd_at_stake: Dollars per run, ``None`` without a price.
        co2_g_at_stake: Grams CO2eq per run, where the finding is about carbon.
        recommendation: What to do.
        energy_per_year_j: Per year, given ``runs_per_year`` (or the finding's own basis).
        usd_per_year: Per year, ``None`` without a price or a yearly basis.
        device: The device concerned, ``""`` for the whole run.
    """

    kind: str
    severity: str
    title: str
    evidence: str
    recommendation: str
    energy_at_stake_j: float = 0.0
    usd_at_stake: float | None = None
    co2_g_at_stake: float | None = None
    figures: dict[str, Any] = field(default_factory=dict)
    energy_per_year_j: float | None = None
    usd_per_year: float | None = None
    device: str = ""

    @property
    def kwh_at_stake(self) -> float:
        return self.energy_at_stake_j / JOULES_PER_KWH

    def priced(self, usd_per_kwh: float | None) -> Finding:
        """This finding with ``usd_at_stake`` from a price per IT kWh (kept if already set)."""
        if usd_per_kwh is None or self.usd_at_stake is not None:
            return self
        return replace(self, usd_at_stake=self.kwh_at_stake * usd_per_kwh)

    def yearly(self, runs_per_year: float | None) -> Finding:
        """This finding with per-year figures (kept if the finding set its own)."""
        if runs_per_year is None or self.energy_per_year_j is not None:
            return self
        usd = None if self.usd_at_stake is None else self.usd_at_stake * runs_per_year
        return replace(
            self, energy_per_year_j=self.energy_at_stake_j * runs_per_year, usd_per_year=usd
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with kWh added at this edge."""
        out = asdict(self)
        out["kwh_at_stake"] = self.kwh_at_stake
        if self.energy_per_year_j is not None:
            out["kwh_per_year"] = self.energy_per_year_j / JOULES_PER_KWH
        return out


@dataclass(frozen=True)
class Diagnosis:
    """All findings of one run, most energy at stake first.

    Attributes:
        run_id: The run.
        analysed: ``gpu`` or ``cpu`` (no GPU in the run).
        duration_s: The run's duration, as stored.
        energy_j: The analysed component's energy, as stored with the run.
        usd_per_kwh: Price per IT kWh from the run's cost block, ``None`` without one.
        runs_per_year: As given.
        findings: The findings.
        notes: Caveats (the gauge used, what could not be checked).
        energy_method: How the stored energy was obtained (counter, power-integrated,
            estimated), ``power-integrated`` when integrated here from the samples.
        energy_uncertainty_rel: Its stated relative uncertainty, ``None`` if unknown.
    """

    run_id: str
    analysed: str
    duration_s: float
    energy_j: float
    usd_per_kwh: float | None
    runs_per_year: float | None
    findings: list[Finding]
    notes: list[str]
    energy_method: str = "power-integrated"
    energy_uncertainty_rel: float | None = None

    def of_kind(self, kind: str) -> list[Finding]:
        return [f for f in self.findings if f.kind == kind]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["findings"] = [f.to_dict() for f in self.findings]
        return out

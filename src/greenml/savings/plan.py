"""``plan_savings``: every advisor over a project's runs, ranked by CO2eq saved per year.

The advisors (greenml's own, not reimplemented here): the green-practice audit
(:mod:`greenml.advise.audit`), the per-run diagnosis (:mod:`greenml.diagnose`) where the
runs' samples are at hand, runs of one workload at several power limits or clock locks
(compared by :mod:`greenml.report.compare`), and the zone's typical day
(:mod:`greenml.schedule.profile`) for runs started in dirty hours. Candidates that are
one decision merge (:func:`greenml.savings.candidate.merge`); the total is combined
without double counting (:mod:`greenml.savings.combine`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from greenml.savings.candidate import Candidate, merge
from greenml.savings.combine import Combined, combine
from greenml.savings.footprint import Footprint, footprint

DEFAULT_DEADLINE_S = 12 * 3600.0
Samples = Callable[[str], list[dict[str, Any]]]


@dataclass(frozen=True)
class Item:
    """A ranked candidate with its plan id (``gpu-power-nvidia-a100``) and marginal saving."""

    id: str
    rank: int
    candidate: Candidate
    marginal_energy_j: float
    marginal_co2_g: float
    marginal_usd: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "rank": self.rank, **self.candidate.to_dict(),
            "marginal_kwh_per_year": self.marginal_energy_j / 3.6e6,
            "marginal_co2_kg_per_year": self.marginal_co2_g / 1000.0,
            "marginal_usd_per_year": self.marginal_usd,
        }  # fmt: skip


@dataclass(frozen=True)
class SavingsPlan:
    """The ranked items, the yearly footprint they act on, and their combined total."""

    scope: str
    year: Footprint
    items: tuple[Item, ...]
    total: Combined
    made_at: str
    notes: tuple[str, ...] = field(default_factory=tuple)
    escalation: float = 0.0  # the money's yearly change, for figures over several years
    years: float = 3.0

    def item(self, item_id: str) -> Item | None:
        return next((i for i in self.items if i.id == item_id), None)

    def over_years(self, usd: float | None) -> float | None:
        """A yearly $ saving over :attr:`years` years, prices changing by :attr:`escalation`."""
        from greenml.accounting.escalation import over_years

        return None if usd is None else over_years(usd, self.escalation, self.years)

    def to_dict(self) -> dict[str, Any]:
        items = []
        for i in self.items:
            items.append({**i.to_dict(), "usd_over_years": self.over_years(i.marginal_usd)})
        return {
            "scope": self.scope,
            "price_escalation_per_year": self.escalation,
            "years": self.years,
            "made_at": self.made_at,
            "footprint": self.year.to_dict(),
            "combined": {
                "rule": "applied in rank order, multiplicative on the remaining footprint",
                "kwh_per_year": self.total.energy_j / 3.6e6,
                "co2_kg_per_year": self.total.co2_g / 1000.0,
                "co2_kg_uncertainty": self.total.co2_uncertainty_g / 1000.0,
                "usd_per_year": self.total.usd,
                "usd_over_years": self.over_years(self.total.usd),
            },
            "items": items,
            "notes": list(self.notes),
        }


def slug(key: str) -> str:
    """A plan id from a decision key: ``gpu-power:NVIDIA A100`` → ``gpu-power-nvidia-a100``."""
    return re.sub(r"[^a-z0-9]+", "-", key.lower()).strip("-")


def plan_savings(
    records: Sequence[Mapping[str, Any]],
    samples: Samples,
    *,
    verdicts: Sequence[dict[str, Any]] = (),
    extra: Sequence[Candidate] = (),
    scope: str = "the runs given",
    period_s: float | None = None,
    deadline_s: float = DEFAULT_DEADLINE_S,
    instance_prices: Path | None = None,
    escalation: float = 0.0,
    years: float = 3.0,
    diagnose: Callable[[str], Any] | None = None,
    state: Callable[[str, str], dict[str, Any] | None] | None = None,
) -> SavingsPlan:
    """Rank every advisor's candidate changes over ``records`` by CO2eq saved per year.

    Args:
        records: The project's run records.
        samples: A run id → its samples (the audit reads GPU activity from them).
        verdicts: Stored CI gate verdicts (the audit's evidence of a gate).
        extra: Candidates found elsewhere (the per-run diagnosis).
        scope: What the runs are, in words.
        period_s: The period the runs stand for (default: their own span, ≥ 1 day).
        deadline_s: How much later a job may start for green hours.
        instance_prices: A user price table or provider export, searched first.
        escalation: The yearly change of prices, for money over ``years`` years.
        years: The horizon of the money over several years.
        diagnose: A run id → its :class:`~greenml.diagnose.Diagnosis` (with a store).
        state: The store's ``get_state`` (the batch-size optimizer's runs), with a store.
    """
    from greenml.advise.audit import audit
    from greenml.savings.from_audit import from_audit
    from greenml.savings.hours import from_hours
    from greenml.savings.power import from_power_settings
    from greenml.savings.spot import from_spot

    year = footprint(records, period_s)
    done = [dict(r) for r in records if r.get("status") == "completed"]
    notes = []
    if not done:
        notes.append("no completed run in scope: nothing to plan")
    spot = from_spot(done, year, instance_prices)  # re-prices the audit's spot item
    audited = [c for c in from_audit(audit(done, samples, verdicts, scope), done, year)
               if c.key not in {s.key for s in spot}]  # fmt: skip
    found = [*audited, *from_power_settings(done, year), *from_hours(done, year, deadline_s),
             *spot, *extra]
    if state is not None:
        from greenml.savings.batch import from_batch_state

        found += from_batch_state(done, year, state)
    if diagnose is not None:
        from greenml.savings.from_diagnose import from_diagnose

        diagnosed, skipped = from_diagnose(done, year, diagnose)
        found += diagnosed
        notes += skipped
    ranked = sorted(merge(found), key=lambda c: (-c.co2_g, -c.energy_j, -(c.usd or 0.0)))
    total = combine(ranked, year)
    items = tuple(
        Item(slug(c.key), n, c, m.energy_j, m.co2_g, m.usd)
        for n, (c, m) in enumerate(zip(ranked, total.marginals, strict=True), start=1)
    )
    made = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return SavingsPlan(scope, year, items, total, made, tuple(notes), escalation, years)

"""The savings plan and the verified savings as a report (Markdown, HTML, JSON) and rows.

One set of rows serves the terminal table and the report's table, formatted through
:mod:`greenml.quantities`. Verified savings (ledgered) are summed; expected ones are
listed apart and never added to the verified total.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import greenml.quantities as q
from greenml.report.model import Report, Section, Table
from greenml.savings.candidate import BASES, Base, Candidate
from greenml.savings.combine import Combined, combine
from greenml.savings.plan import SavingsPlan

if TYPE_CHECKING:
    from greenml.report.runset import RunSet

COLUMNS = ["#", "item", "change", "kWh/yr", "CO2eq/yr", "$/yr", "±", "effort", "risk", "greenml"]


def _usd(value: float | None, rel: float) -> str:
    return "?" if value is None else q.money(value, uncertainty_rel=rel)


def rows(plan: SavingsPlan) -> list[list[str]]:
    """One row per ranked item: its marginal yearly saving (after the items above it)."""
    out = []
    for i in plan.items:
        c = i.candidate
        out.append([
            str(i.rank), i.id, c.title,
            q.kwh(i.marginal_energy_j, uncertainty_rel=c.uncertainty_rel),
            q.co2(i.marginal_co2_g, uncertainty_rel=c.uncertainty_rel),
            _usd(i.marginal_usd, c.uncertainty_rel), q.pm(c.uncertainty_rel),
            c.effort, c.risk, {"policy": "apply: policy", "artifact": "apply: files",
                               "advice": "advice"}[c.action],
        ])  # fmt: skip
    return out


def totals_line(plan: SavingsPlan) -> str:
    t = plan.total
    rel = t.co2_uncertainty_g / t.co2_g if t.co2_g > 0 else None
    money = "" if t.usd is None else f", {q.money(t.usd)}"
    over = plan.over_years(t.usd)
    later = "" if over is None else (
        f"; {q.money(over)} over {plan.years:g} years at prices changing "
        f"{plan.escalation * 100:+g} %/year")  # fmt: skip
    return (f"All items together: {q.kwh(t.energy_j)}, {q.co2(t.co2_g, uncertainty_rel=rel)}"
            f"{money} per year (applied in rank order, each on what the items above leave: "
            f"no joule counted twice){later}")  # fmt: skip


def _ids(runs: tuple[str, ...], limit: int = 6) -> str:
    more = " …" if len(runs) > limit else ""
    return ", ".join(r[:8] for r in runs[:limit]) + more


def plan_document(
    plan: SavingsPlan,
    verified: Mapping[str, Mapping[str, Any]] | None = None,
    failed: Mapping[str, Mapping[str, Any]] | None = None,
) -> Report:
    """The plan and the verified savings as a report (kind ``savings-plan``)."""
    y = plan.year
    head = Section("Footprint in scope", [
        f"{len(y.runs)} completed run(s) over {q.duration(y.period_s)} ({plan.scope}), "
        f"scaled to a year (× {y.per_year:.3g}): {q.kwh(y.energy_j)} IT energy "
        f"({q.kwh(y.gpu_j)} on GPUs), {q.co2(y.co2_g)}"
        + ("" if y.usd is None else f", {q.money(y.usd)}") + ".",
    ])  # fmt: skip
    ranked = Section(
        "Expected savings, ranked (not yet verified)",
        [totals_line(plan)],
        [Table(COLUMNS, rows(plan), note="each figure: the item's marginal saving per year; "
               "methods and evidence below")],
    )  # fmt: skip
    detail = Section("Evidence and method", [
        f"{i.id}: {i.candidate.method}. Evidence: runs {_ids(i.candidate.evidence_runs)}; "
        f"findings {', '.join(i.candidate.findings)}." for i in plan.items
    ] or ["No candidate change found."])  # fmt: skip
    sections = [head, verified_section(plan, verified or {}, failed or {}), ranked, detail]
    data = {**plan.to_dict(), "verified": list((verified or {}).values()),
            "verified_total": _total_dict(plan, verified or {}),
            "not_saved": sorted(failed or {})}  # fmt: skip
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return Report("savings-plan", "Savings plan", sections, data, list(y.runs), now)


def verified_total(plan: SavingsPlan, verified: Mapping[str, Mapping[str, Any]]) -> Combined:
    """The verified savings per year, combined as the plan combines expected ones."""
    ranked = []
    for d in verified.values():
        base: Base = next((b for b in BASES if b == d.get("base")), "energy")
        ranked.append(Candidate(
            str(d.get("item")), str(d.get("title")), base, float(d.get("share_verified") or 0.0),
            0.0, 0.0, None, float(d.get("uncertainty_rel") or 0.0), "verified", (), (), "", "",
            "advice"))  # fmt: skip
    ranked.sort(key=lambda c: BASES.index(c.base))  # energy first, then the intensity left
    return combine(ranked, plan.year)


def _total_dict(plan: SavingsPlan, verified: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    t = verified_total(plan, verified)
    return {"kwh_per_year": t.energy_j / 3.6e6, "co2_kg_per_year": t.co2_g / 1000.0,
            "usd_per_year": t.usd}  # fmt: skip


def verified_section(
    plan: SavingsPlan,
    verified: Mapping[str, Mapping[str, Any]],
    failed: Mapping[str, Mapping[str, Any]],
) -> Section:
    """The verified savings (ledgered) summed, and the changes that did not save."""
    paragraphs = [f"{item_id}: did NOT save ({_last(v)}): undo it with greenml savings undo "
                  f"{item_id}" for item_id, v in failed.items()]  # fmt: skip
    if not verified:
        return Section("Verified savings", ["None yet: greenml savings verify proves an "
                                            "applied change once enough runs exist.",
                                            *paragraphs])  # fmt: skip
    t = verified_total(plan, verified)
    money = "" if t.usd is None else f", {q.money(t.usd)}"
    paragraphs.insert(0, (
        f"Verified, all together: {q.kwh(t.energy_j)}, {q.co2(t.co2_g)}{money} per year: each "
        "measured before against after by the CI gate's rule, scaled to the plan's yearly "
        "footprint, combined without double counting; each is an entry of kind saving in "
        "the ledger. Expected savings below are not added to it."))  # fmt: skip
    table_rows = []
    for d in verified.values():
        rel, unc = float(d.get("saving_rel") or 0.0), float(d.get("uncertainty_rel") or 0.0)
        per = "CO2eq per kWh" if d.get("metric") == "carbon" else "energy per unit of work"
        table_rows.append([
            str(d.get("item")), per, q.percent_pm(rel, unc),
            f"{len(d.get('before_runs') or [])} → {len(d.get('after_runs') or [])}",
            str(d.get("verified_at")),
        ])  # fmt: skip
    return Section("Verified savings", paragraphs,
                   [Table(["item", "measured", "saving", "runs before → after", "verified at"],
                          table_rows)])  # fmt: skip


def _last(applied: Mapping[str, Any]) -> str:
    last = applied.get("last_verify") or {}
    rel, unc = last.get("saving_rel"), last.get("uncertainty_rel")
    if rel is None or unc is None:
        return "no figure"
    return f"{q.percent_pm(float(rel), float(unc))}, within its uncertainty"


def build(
    runs: RunSet, deadline_hours: float = 12.0, price_escalation: float = 0.0, years: float = 3
) -> Report:
    """The ``savings-plan`` report kind (``greenml report savings-plan``): the plan of the
    runs given, with the verified savings their store keeps."""
    from greenml.ledger.kinds import NAMESPACE, VERIFIED
    from greenml.report.audit import gate_verdicts
    from greenml.savings.plan import plan_savings

    plan = plan_savings(runs.records, runs.samples, verdicts=gate_verdicts(runs),
                        deadline_s=deadline_hours * 3600.0, escalation=price_escalation,
                        years=years)  # fmt: skip
    verified = (runs.state(NAMESPACE, VERIFIED) or {}).get("savings") or {}
    return plan_document(plan, verified)

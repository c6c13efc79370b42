"""The ``audit`` report kind: the green-practice checklist as a document (md, html, json)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import greenml.quantities as q
from greenml.advise.audit import GROUPS, Audit, audit
from greenml.report.model import Report, Section, Table

if TYPE_CHECKING:
    from greenml.report.runset import RunSet

GATE_NAMESPACE = "gate"
GATE_KEY = "verdicts"

_GROUP_TEXT = {
    "model": "Model: efficient architectures and numerics.",
    "machine": "Machine: the right hardware, used fully.",
    "mechanization": "Mechanization: the facility and the practices around the jobs.",
    "map": "Map: where and when the jobs run.",
}
_MARK = {"passed": "passed", "failed": "FAILED", "unknown": "unknown"}


def gate_verdicts(runs: RunSet) -> list[dict[str, Any]]:
    """The CI gate verdicts ``greenml check`` stored with the runs' store.

    On a team server (a run set of one project) only the verdicts whose baseline and
    candidate runs are all of that project count: one project's CI gate is no
    evidence for another's, and a verdict naming no stored run belongs to none.
    """
    state = runs.state(GATE_NAMESPACE, GATE_KEY) or {}
    items = [v for v in state.get("verdicts") or [] if isinstance(v, dict)]
    if runs.project_id is None:
        return items
    return [v for v in items if runs.all_in_project(_verdict_runs(v))]


def _verdict_runs(verdict: dict[str, Any]) -> list[str]:
    sides = (verdict.get("baseline_runs"), verdict.get("candidate_runs"))
    return [r for side in sides if isinstance(side, list) for r in side]


def run_audit(runs: RunSet, scope: str = "the runs given") -> Audit:
    """The audit of a run set (its samples and gate verdicts from the same store)."""
    return audit(runs.records, runs.samples, gate_verdicts(runs), scope)


def build(runs: RunSet, scope: str = "the runs given") -> Report:
    """The checklist, one section per M, each item with its evidence and what is at stake."""
    result = run_audit(runs, scope)
    return audit_document(result)


def audit_document(result: Audit) -> Report:
    """A :class:`Report` of an :class:`Audit`."""
    counts = result.counts()
    summary = Section(
        "Summary",
        [
            f"Green-practice audit of {len(result.runs)} run(s) ({result.scope}): "
            f"{counts['passed']} passed, {counts['failed']} failed, {counts['unknown']} unknown.",
            "Items follow Google's 4Ms (Patterson et al., IEEE Computer 2022): model, machine, "
            "mechanization, map. 'Unknown' means the store holds no evidence either way.",
            *result.notes,
        ],
    )
    sections = [summary]
    for group in GROUPS:
        rows = [
            [i.title, _MARK[i.status], i.evidence, _stake(i), i.fix or "-"]
            for i in result.items
            if i.group == group
        ]
        table = Table(["item", "status", "evidence", "at stake", "what to do"], rows)
        sections.append(Section(group.capitalize(), [_GROUP_TEXT[group]], [table]))
    return Report(
        kind="audit",
        title="Green-practice audit",
        sections=sections,
        data=result.to_dict(),
        runs=list(result.runs),
        generated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )


def _stake(item: Any) -> str:
    parts = []
    if item.energy_j is not None:
        rel = getattr(item, "uncertainty_rel", None)
        if rel is None:
            parts.append(q.energy(item.energy_j))
        else:
            parts.append(f"{q.energy(item.energy_j, uncertainty_rel=rel)} {q.pm(rel)}")
    if item.usd is not None:
        parts.append(q.money(item.usd))
    if item.co2_g is not None:
        parts.append(q.co2(item.co2_g))
    return ", ".join(parts) or "-"

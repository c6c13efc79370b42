"""Candidates from the green-practice audit (:mod:`greenml.advise.audit`): its failed items.

Each failed item with a figure at stake becomes a candidate; its share of the base is
the item's energy (or CO2eq, or money) at stake over the same runs' total, so that
the yearly figure is the base × share (:mod:`greenml.savings.footprint`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from greenml.advise.audit import Audit, Item
from greenml.savings.candidate import Action, Base, Candidate
from greenml.savings.footprint import Footprint, gpu_j

# audit key → (decision key, base, effort, risk, action, settings)
_MAP: dict[str, tuple[str, Base, str, str, Action, dict[str, Any]]] = {
    "idle-gpus": ("idle-gpu", "gpu", "medium",
                  "time to first request after scale-from-zero (cold start)", "artifact",
                  {"artifact": "keda-scaledobject"}),
    "precision": ("precision", "gpu", "medium",
                  "accuracy: check the metric after switching to bf16", "advice", {}),
    "spot-checkpointing": ("spot", "cost", "medium",
                           "time to result: interruptions cost the work since the last "
                           "checkpoint", "policy", {"spot": True, "checkpoint_interval_s": 1800}),
    "pue": ("facility", "energy", "high", "migration effort; data residency", "advice", {}),
    "clean-grid": ("region", "carbon", "high",
                   "data residency, latency; another region's prices", "artifact",
                   {"artifact": "skypilot"}),
}  # fmt: skip


_PER_RUN = {"idle-gpus"}
"""Items the per-run diagnosis finds run by run: its runs are the evidence, not all runs."""


def from_audit(
    result: Audit, records: Sequence[Mapping[str, Any]], year: Footprint
) -> list[Candidate]:
    """The audit's failed items with a figure, as yearly candidates."""
    done = {str(r["id"]): r for r in records}
    totals = _totals(list(done.values()))
    out = []
    for item in result.items:
        if item.status != "failed" or item.key not in _MAP:
            continue
        found = _candidate(item, totals, year, result.runs)
        if found is not None:
            out.append(found)
    return out


def _totals(records: list[Mapping[str, Any]]) -> dict[str, float]:
    pue = [float((r.get("carbon") or {}).get("pue") or 1.0) for r in records]
    return {
        "gpu": sum(gpu_j(r) * p for r, p in zip(records, pue, strict=True)),
        "energy": sum(float((r.get("energy") or {}).get("total_j") or 0.0) * p
                      for r, p in zip(records, pue, strict=True)),
        "carbon": sum(float((r.get("carbon") or {}).get("kg") or 0.0) * 1000.0 for r in records),
        "cost": sum(float((r.get("cost") or {}).get("usd") or 0.0) for r in records),
    }


def _candidate(
    item: Item, totals: dict[str, float], year: Footprint, runs: tuple[str, ...]
) -> Candidate | None:
    key, base, effort, risk, action, settings = _MAP[item.key]
    at_stake = {"gpu": item.energy_j, "energy": item.energy_j, "carbon": item.co2_g,
                "cost": item.usd}[base]  # fmt: skip
    if at_stake is None or totals[base] <= 0:
        return None
    share = min(1.0, at_stake / totals[base])
    bound = "upper bound" in item.evidence
    if bound:  # somewhere between nothing and the bound: half of it, ± all of that
        share /= 2.0
    energy = {"gpu": year.gpu_j, "energy": year.energy_j}.get(base, 0.0) * share
    co2 = energy * year.g_per_j if base != "carbon" else year.co2_g * share
    if base == "cost":
        co2 = 0.0
    money = None
    if base == "cost":
        money = (year.usd or 0.0) * share if year.usd is not None else None
    elif year.usd_per_j is not None:
        money = energy * year.usd_per_j
    rel = item.uncertainty_rel if item.uncertainty_rel is not None else 0.5
    how = "" if item.uncertainty_rel is not None else " (no stated uncertainty: ±50 % assumed)"
    if bound:
        rel, how = 1.0, " (the audit gives an upper bound: half of it, ±100 %)"
    return Candidate(
        key=key, title=item.title, base=base, share=share, energy_j=energy, co2_g=co2,
        usd=money, uncertainty_rel=rel,
        method=f"audit item {item.key}: {item.evidence}; × the runs' yearly rate{how}",
        evidence_runs=() if item.key in _PER_RUN else runs, findings=(f"audit:{item.key}",),
        effort=effort, risk=risk,
        action=action, settings=dict(settings),
    )  # fmt: skip

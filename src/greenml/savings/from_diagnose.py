"""Candidates from the per-run diagnosis (:func:`greenml.diagnose.diagnose_run`).

Each run with samples is diagnosed; its findings are summed by decision over the runs
(an idle GPU in three runs is one decision), as a share of the same runs' GPU energy
(or all energy), then scaled to the year like every other candidate. A finding about
carbon (a cleaner location) keeps its own CO2eq. The duty-cycle finding is left out: its
energy is the machine's idle time between runs, not a part of the runs' energy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from greenml.errors import GreenmlError
from greenml.savings.candidate import Action, Base, Candidate
from greenml.savings.footprint import Footprint, co2_g, gpu_j

# finding kind → (decision key, base, effort, risk, action, settings)
_MAP: dict[str, tuple[str, Base, str, str, Action, dict[str, Any]]] = {
    "idle": ("idle-gpu", "gpu", "medium", "time to first request after scale-from-zero",
             "artifact", {}),
    "input-bound": ("input-pipeline", "gpu", "low", "memory or disk for the cache", "policy",
                    {"cache": True}),
    "underused": ("rightsize", "gpu", "medium", "time to result on a smaller GPU", "advice", {}),
    "rightsizing": ("rightsize", "gpu", "medium", "time to result on a smaller GPU", "advice",
                    {}),
    "low-mfu": ("batch-size", "gpu", "medium", "accuracy: a larger batch needs its learning "
                "rate retuned", "advice", {}),
    "precision": ("precision", "gpu", "medium", "accuracy: check the metric after switching",
                  "advice", {}),
    "straggler": ("stragglers", "gpu", "medium", "none to the result", "advice", {}),
    "communication": ("communication", "gpu", "high", "none to the result", "advice", {}),
    "scaling": ("scaling", "gpu", "medium", "time to result with fewer GPUs", "advice", {}),
    "location": ("region", "carbon", "high", "data residency, latency", "artifact", {}),
}  # fmt: skip

Diagnose = Callable[[str], Any]


def from_diagnose(
    records: Sequence[Mapping[str, Any]], year: Footprint, diagnose: Diagnose
) -> tuple[list[Candidate], list[str]]:
    """Candidates from every diagnosable run, and notes on the runs that could not be."""
    sums: dict[str, dict[str, Any]] = {}
    skipped = 0
    for record in records:
        try:
            diagnosis = diagnose(str(record["id"]))
        except GreenmlError:
            skipped += 1
            continue
        rel = diagnosis.energy_uncertainty_rel
        for f in diagnosis.findings:
            if f.kind not in _MAP:
                continue
            entry = sums.setdefault(f.kind, {"j": 0.0, "g": 0.0, "runs": [], "rel": [],
                                             "titles": []})  # fmt: skip
            entry["j"] += f.energy_at_stake_j
            entry["g"] += f.co2_g_at_stake or 0.0
            entry["runs"].append(str(record["id"]))
            entry["rel"].append(rel if isinstance(rel, (int, float)) else None)
            entry["titles"].append(f.title)
    totals = {"gpu": sum(gpu_j(r) for r in records) or sum(
        float((r.get("energy") or {}).get("total_j") or 0.0) for r in records),
        "carbon": sum(c for r in records if (c := co2_g(r)) is not None)}  # fmt: skip
    found = [_candidate(kind, entry, totals, year) for kind, entry in sums.items()]
    out = [c for c in found if c is not None]
    why = f"{skipped} run(s) not diagnosed (no samples or no GPU/CPU timeline)"
    return out, [why] if skipped else []


def _candidate(
    kind: str, entry: dict[str, Any], totals: dict[str, float], year: Footprint
) -> Candidate | None:
    key, base, effort, risk, action, settings = _MAP[kind]
    stake = entry["g"] if base == "carbon" else entry["j"]
    if stake <= 0 or totals[base] <= 0:
        return None
    share = min(1.0, stake / totals[base])
    energy = 0.0 if base == "carbon" else year.gpu_j * share
    co2 = year.co2_g * share if base == "carbon" else energy * year.g_per_j
    known = [r for r in entry["rel"] if r is not None]
    rel = max(known) if known and len(known) == len(entry["rel"]) else 0.5
    how = "" if rel != 0.5 else " (a run without a stated uncertainty: ±50 % assumed)"
    return Candidate(
        key=key, title=entry["titles"][0], base=base, share=share, energy_j=energy, co2_g=co2,
        usd=None if year.usd_per_j is None or base == "carbon" else energy * year.usd_per_j,
        uncertainty_rel=rel,
        method=(f"diagnose: {kind} in {len(set(entry['runs']))} run(s), the energy at stake "
                f"as a share of their {'CO2eq' if base == 'carbon' else 'GPU energy'}, × the "
                f"yearly rate{how}"),
        evidence_runs=tuple(dict.fromkeys(entry["runs"])), findings=(f"diagnose:{kind}",),
        effort=effort, risk=risk, action=action, settings=dict(settings),
    )  # fmt: skip

"""Candidates from the batch-size optimizer's explored runs (:mod:`greenml.optimize.batch_size`).

The optimizer keeps, per job, every run it saw (batch size, energy, time, whether it
reached the target) in the store's state (namespace ``batch-size``, the job's name). For
each workload of the project that it explored, the size of least mean energy among the
runs that reached the target is compared with the default size's: the energy share saved
per training run, × the workload's share of the project's energy. Its uncertainty is the
two means' standard errors in quadrature (one run a side: ±50 %, stated).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from greenml.savings.candidate import Candidate
from greenml.savings.footprint import Footprint
from greenml.savings.power import workload_of


def from_batch_state(
    records: Sequence[Mapping[str, Any]], year: Footprint,
    state: Callable[[str, str], dict[str, Any] | None],
) -> list[Candidate]:  # fmt: skip
    """One candidate per explored workload whose best size saves energy over the default."""
    from greenml.optimize.batch_size import NAMESPACE

    total = sum(float((r.get("energy") or {}).get("total_j") or 0.0) for r in records)
    by_work: dict[str, float] = {}
    for r in records:
        if (work := workload_of(r)) is not None:
            by_work[work] = by_work.get(work, 0.0) + float((r.get("energy") or {}).get(
                "total_j") or 0.0)  # fmt: skip
    out = []
    for work, joules in sorted(by_work.items()):
        found = state(NAMESPACE, work)
        runs = (found or {}).get("runs")
        if not isinstance(runs, list) or total <= 0:
            continue
        reached: dict[int, list[float]] = {}
        for run in runs:
            if isinstance(run, dict) and run.get("reached"):
                reached.setdefault(int(run["batch_size"]), []).append(float(run["energy_j"]))
        default = found.get("default_batch_size") if found else None
        if default not in reached or len(reached) < 2:
            continue
        best = min(reached, key=lambda b: statistics.fmean(reached[b]))
        if best == default:
            continue
        e_best, e_default = statistics.fmean(reached[best]), statistics.fmean(reached[default])
        saving = 1.0 - e_best / e_default
        rel = _rel(reached[best], reached[default], saving)
        share = saving * joules / total
        energy = year.energy_j * share
        out.append(Candidate(
            key=f"batch-size:{work}", title=f"Batch size {best} for {work!r} (default {default})",
            base="energy", share=share, energy_j=energy, co2_g=energy * year.g_per_j,
            usd=None if year.usd_per_j is None else energy * year.usd_per_j,
            uncertainty_rel=rel,
            method=(f"measured by the batch-size optimizer: {len(reached[best])} run(s) at {best} "
                    f"reached the target with {saving * 100:.0f} % less energy than "
                    f"{len(reached[default])} at {default}; × the workload's share × the yearly "
                    "rate" + ("" if rel != 0.5 else " (one run a side: ±50 % assumed)")),
            evidence_runs=(), findings=(f"batch-size-optimizer:{work}",), effort="low",
            risk="accuracy: the target was reached at this size in the optimizer's runs",
            action="policy",
            settings={"batch_size": best, "workload": work, "expected_saving_rel": saving},
        ))  # fmt: skip
    return out


def _rel(best: list[float], default: list[float], saving: float) -> float:
    if len(best) < 2 or len(default) < 2 or saving <= 0:
        return 0.5
    sem = math.hypot(statistics.stdev(best) / math.sqrt(len(best)) / statistics.fmean(best),
                     statistics.stdev(default) / math.sqrt(len(default))
                     / statistics.fmean(default))  # fmt: skip
    return sem * (1.0 - saving) / saving

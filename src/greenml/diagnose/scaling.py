"""Scaling: parallel efficiency across device counts, and communication vs computation.

Runs of the same job (same name, or same value of a tag) at different device
counts give the speedup ``throughput(n) / throughput(base)``, the parallel
efficiency ``speedup / (n / base)`` and the energy per unit of work. Work is
the run's progress total (``greenml.progress``) or 1 (the same job each time).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any

from greenml.diagnose.stragglers import by_rank
from greenml.quantities import energy


@dataclass(frozen=True)
class ScalingPoint:
    """One run: its device count, duration, energy and the work it did."""

    devices: int
    duration_s: float
    energy_j: float
    work: float = 1.0
    run_id: str | None = None


@dataclass(frozen=True)
class ScalingRow:
    """Figures at one device count (median over its runs)."""

    devices: int
    runs: int
    throughput: float  # work per second
    speedup: float
    efficiency: float  # speedup / device ratio
    energy_per_work_j: float
    energy_ratio: float  # energy per work relative to the baseline


@dataclass(frozen=True)
class ScalingReport:
    """Parallel efficiency against the smallest device count."""

    baseline_devices: int
    rows: list[ScalingRow]
    text: str


def analyze_scaling(points: Sequence[ScalingPoint]) -> ScalingReport:
    """Speedup, parallel efficiency and energy per work by device count."""
    groups: dict[int, list[ScalingPoint]] = {}
    for p in points:
        if p.devices > 0 and p.duration_s > 0 and p.work > 0:
            groups.setdefault(p.devices, []).append(p)
    if not groups:
        return ScalingReport(0, [], "no runs to compare")
    base = min(groups)
    stats = {
        n: (median(p.work / p.duration_s for p in ps), median(p.energy_j / p.work for p in ps))
        for n, ps in sorted(groups.items())
    }
    base_tp, base_epw = stats[base]
    rows = []
    for n, (tp, epw) in stats.items():
        speedup = tp / base_tp
        rows.append(ScalingRow(
            devices=n, runs=len(groups[n]), throughput=tp, speedup=speedup,
            efficiency=speedup / (n / base), energy_per_work_j=epw,
            energy_ratio=epw / base_epw if base_epw > 0 else float("nan"),
        ))  # fmt: skip
    parts = [
        f"{r.devices}: speedup {r.speedup:.2f}×, efficiency {r.efficiency:.0%}, "
        f"energy per work {r.energy_ratio:.2f}×"
        for r in rows
        if r.devices != base
    ]
    text = f"against {base} device(s) — " + ("; ".join(parts) if parts else "one device count")
    return ScalingReport(base, rows, text)


def group_runs(
    records: Sequence[Mapping[str, Any]], tag: str | None = None
) -> dict[str, list[Mapping[str, Any]]]:
    """Runs of the same job: grouped by ``tags[tag]`` when given, else by name."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        key = (r.get("tags") or {}).get(tag) if tag else r.get("name")
        if key is not None:
            out.setdefault(str(key), []).append(r)
    return out


def scaling_point(record: Mapping[str, Any], devices_tag: str = "devices") -> ScalingPoint:
    """A run record as a :class:`ScalingPoint`.

    Devices: the tag ``devices_tag``, else the number of measured GPUs. Work:
    the progress total, else 1.
    """
    tags = record.get("tags") or {}
    if tags.get(devices_tag) is not None:
        devices = int(tags[devices_tag])
    else:
        gpu = ((record.get("energy") or {}).get("components") or {}).get("gpu") or {}
        devices = len(gpu.get("devices") or {})
    progress = record.get("progress") or {}
    work = progress.get("total") or 1.0
    energy = (record.get("energy") or {}).get("total_j") or 0.0
    return ScalingPoint(
        devices, float(record.get("duration_s") or 0.0), float(energy), float(work),
        record.get("id"),
    )  # fmt: skip


@dataclass(frozen=True)
class CommSplit:
    """Time and energy in ``comm`` and ``compute`` windows, over all ranks."""

    comm_s: float
    compute_s: float
    comm_fraction: float  # of comm + compute time
    comm_energy_j: float
    compute_energy_j: float
    per_rank: dict[int, tuple[float, float]]  # rank -> (comm_s, compute_s)
    text: str


def comm_compute_split(
    windows: Sequence[Mapping[str, Any]], comm: str = "comm", compute: str = "compute"
) -> CommSplit:
    """How the marked time splits between communication and computation."""
    c, k = by_rank(windows, comm), by_rank(windows, compute)
    per_rank = {
        r: (sum(w.duration_s for w in c.get(r, [])), sum(w.duration_s for w in k.get(r, [])))
        for r in sorted({*c, *k})
    }
    comm_s = sum(a for a, _ in per_rank.values())
    compute_s = sum(b for _, b in per_rank.values())
    comm_j = sum(w.energy_j for ws in c.values() for w in ws)
    compute_j = sum(w.energy_j for ws in k.values() for w in ws)
    total = comm_s + compute_s
    frac = comm_s / total if total > 0 else 0.0
    text = (
        f"communication {frac:.0%} of the marked time ({comm_s:.3g} s of {total:.3g} s "
        f"over {len(per_rank)} rank(s)), {energy(comm_j)}"
        if total > 0
        else f"no {comm!r}/{compute!r} windows"
    )
    return CommSplit(comm_s, compute_s, frac, comm_j, compute_j, per_rank, text)

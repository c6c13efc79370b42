"""``greenml diagnose --job ID``: stragglers across nodes, scaling, nodes out of line.

- **Stragglers**: every node's ``step/rankR`` windows (published by each rank of
  the program, stored with its node's run) are put together and handed to
  :func:`~greenml.diagnose.stragglers.find_stragglers`; the critical-path rank
  is then named with its node.
- **Scaling**: earlier jobs of the same job name at other node counts give the
  speedup, parallel efficiency and energy per unit of work
  (:func:`~greenml.diagnose.scaling.analyze_scaling`, one point per job: its
  node count, wall-clock span, summed energy and progress total).
- **Nodes out of line**: a node whose mean GPU power or utilization is far
  from the median of its peers (``out_of_line`` relative difference).

Only the runs the job summary counts are read (one per node and step: see
:mod:`greenml.jobs.summary`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from greenml.diagnose.scaling import ScalingPoint, analyze_scaling
from greenml.diagnose.stragglers import find_stragglers, parse_window
from greenml.jobs.summary import JobSummary, NodeRun, summarize_job
from greenml.store.jobs import job_runs, jobs_named
from greenml.store.repository import Store

GAUGES = {"gpu_power_w": "GPU power per GPU (W)", "gpu_utilization": "GPU utilization"}
OUT_OF_LINE = 0.25
"""A node whose mean GPU power or utilization differs from its peers' median by more."""


@dataclass(frozen=True)
class JobDiagnosis:
    """What ``greenml diagnose --job`` found."""

    job_id: str
    summary: dict[str, Any]
    stragglers: dict[str, Any] | None
    scaling: dict[str, Any] | None
    outliers: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id, "energy": self.summary["energy"],
            "nodes": len(self.summary["nodes"]), "expected_nodes": self.summary["expected_nodes"],
            "stragglers": self.stragglers, "scaling": self.scaling, "outliers": self.outliers,
            "problems": self.summary["problems"], "notes": self.notes,
        }  # fmt: skip


def diagnose_job(
    store: Store, job_id: str, *, out_of_line: float = OUT_OF_LINE, project_id: int | None = None
) -> JobDiagnosis:
    """Stragglers, scaling and outlying nodes of one job.

    ``project_id``: only that team-server project's runs (the job's and, for scaling,
    the earlier jobs of its name); None: every run of the store.

    Raises:
        JobNotFound: No run belongs to the job.
    """
    summary = summarize_job(job_id, job_runs(store, job_id, project_id))
    counted = [n for n in summary.nodes if n.counted]
    notes: list[str] = []
    stragglers = _stragglers(store, counted, notes)
    scaling = _scaling(store, summary, notes, project_id)
    outliers = _outliers(store, counted, out_of_line, notes)
    return JobDiagnosis(job_id, summary.to_dict(), stragglers, scaling, outliers, notes)


def _stragglers(store: Store, nodes: Sequence[NodeRun], notes: list[str]) -> dict[str, Any] | None:
    windows: list[dict[str, Any]] = []
    owner: dict[int, NodeRun] = {}
    for node in nodes:
        for w in store.windows(node.run_id):
            if "/rank" not in str(w.get("name")):
                continue
            rank = parse_window(w).rank
            if owner.setdefault(rank, node).run_id != node.run_id:
                notes.append(f"rank {rank} has windows in two runs ({owner[rank].run_id}, "
                             f"{node.run_id}): the second is left out")  # fmt: skip
                continue
            windows.append(w)
    if len({parse_window(w).rank for w in windows if parse_window(w).name == "step"}) < 2:
        notes.append("no cross-node straggler analysis: fewer than 2 ranks published 'step' "
                     "windows (greenml.Meter(publish_windows=True) in each rank)")  # fmt: skip
        return None
    report = find_stragglers(windows, "step")
    critical = owner.get(report.critical_rank) if report.critical_rank is not None else None
    text = report.text
    if critical is not None:
        text += f"; rank {report.critical_rank} runs on node {critical.node} " \
                f"(node rank {critical.node_rank})"  # fmt: skip
    return {
        "steps": report.steps, "critical_rank": report.critical_rank,
        "critical_node": critical.node if critical else None,
        "critical_node_rank": critical.node_rank if critical else None,
        "critical_share": report.critical_share, "step_energy_j": report.step_energy_j,
        "wait_energy_j": report.wait_energy_j, "wait_fraction": report.wait_fraction,
        "ranks": [
            {"rank": s.rank, "node": owner[s.rank].node, "node_rank": owner[s.rank].node_rank,
             "mean_step_s": s.mean_step_s, "mean_slack_s": s.mean_slack_s,
             "slowest_steps": s.slowest_steps, "wait_energy_j": s.wait_energy_j}
            for s in report.ranks
        ],
        "text": text,
    }  # fmt: skip


def _scaling(
    store: Store, summary: JobSummary, notes: list[str], project_id: int | None = None
) -> dict[str, Any] | None:
    if not summary.job_name:
        notes.append("no scaling analysis: the job has no name (greenml run --name, or the "
                     "Slurm job name)")  # fmt: skip
        return None
    points = []
    for job_id, records in jobs_named(store, summary.job_name, project_id).items():
        s = summarize_job(job_id, records)
        counted = [r for r in records if any(n.run_id == r.id and n.counted for n in s.nodes)]
        work = max((float(r.progress.total) for r in counted
                    if r.progress is not None and r.progress.total), default=1.0)  # fmt: skip
        wall = s.span.get("wall_s")
        if wall and not s.problems:
            points.append(ScalingPoint(len(counted), float(wall), s.energy["total_j"], work,
                                       job_id))  # fmt: skip
    if len({p.devices for p in points}) < 2:
        notes.append(f"no scaling analysis: jobs named {summary.job_name!r} ran at one node "
                     "count only (jobs with problems are left out)")  # fmt: skip
        return None
    report = analyze_scaling(points)
    return {
        "job_name": summary.job_name, "baseline_nodes": report.baseline_devices,
        "rows": [
            {"nodes": r.devices, "jobs": r.runs, "throughput": r.throughput,
             "speedup": r.speedup, "efficiency": r.efficiency,
             "energy_per_work_j": r.energy_per_work_j, "energy_ratio": r.energy_ratio}
            for r in report.rows
        ],
        "text": report.text.replace("device(s)", "node(s)"),
    }  # fmt: skip


def _outliers(
    store: Store, nodes: Sequence[NodeRun], threshold: float, notes: list[str]
) -> list[dict[str, Any]]:
    per_node: dict[str, dict[str, float]] = {}
    for node in nodes:
        per_node[node.run_id] = _gauges(store, node)
    out: list[dict[str, Any]] = []
    for gauge, label in GAUGES.items():
        values = {rid: g[gauge] for rid, g in per_node.items() if gauge in g}
        if len(values) < 3:
            continue
        for node in nodes:
            if node.run_id not in values:
                continue
            peers = [v for rid, v in values.items() if rid != node.run_id]
            mid = median(peers)
            value = values[node.run_id]
            if mid > 0 and abs(value - mid) / mid > threshold:
                out.append({
                    "node": node.node, "node_rank": node.node_rank, "run_id": node.run_id,
                    "gauge": gauge, "value": value, "peers_median": mid,
                    "difference_rel": (value - mid) / mid,
                    "text": f"node {node.node}: mean {label} {value:.3g} vs {mid:.3g} "
                            f"on its peers ({(value - mid) / mid:+.0%})",
                })  # fmt: skip
    has_gpu = any(d["component"] == "gpu" for n in nodes for d in n.devices.values())
    if not has_gpu:
        notes.append("no outlying-node check: a CPU-only job (the check compares GPUs)")
    elif len(per_node) < 3:
        notes.append("no outlying-node check: fewer than 3 nodes with GPU samples")
    return out


def _gauges(store: Store, node: NodeRun) -> dict[str, float]:
    """Mean GPU power (W, from the node's GPU energy) and mean GPU utilization (samples)."""
    out: dict[str, float] = {}
    gpus = [d for d in node.devices.values() if d["component"] == "gpu"]
    if gpus and node.duration_s:
        out["gpu_power_w"] = sum(d["energy_j"] for d in gpus) / node.duration_s / len(gpus)
    cols = store.sample_columns(node.run_id)
    if "gpu" in cols["components"]:
        import numpy as np

        gpu = cols["component"] == cols["components"].index("gpu")
        util = cols["utilization"][gpu]
        util = util[~np.isnan(util)]
        if util.size:
            out["gpu_utilization"] = float(util.mean())
    return out

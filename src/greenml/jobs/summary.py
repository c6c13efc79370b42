"""One job from many nodes: energy summed with its uncertainty, carbon and cost per node.

:func:`summarize_job` reads the runs of a job (one per node, each with its
``job`` block) and adds them up, saying what it could not add:

- two runs claiming the same node (same step and node rank, or the same node
  name when no rank is known) are a *conflict*: neither is counted, both are
  listed, as counting both would double a node's energy;
- a job whose runs expect different node counts or world sizes is *elastic*:
  no single expected count is assumed, so missing nodes are not computed;
- nodes expected but never seen are listed as *missing*; runs that have not
  finished are counted with their partial figure and flagged.

Energy: the sum over counted nodes; its uncertainty combines each node's in
quadrature (nodes measured independently). Carbon: each node's own figure, at
its own location and intensity source; a node without one makes the total
partial (said, not guessed). Cost likewise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from greenml.record.run_record import RunRecord

UNFINISHED = ("running", "incomplete")


@dataclass(frozen=True)
class NodeRun:
    """One node's run in a job, with its figures."""

    node: str | None
    node_rank: int | None
    step_id: str | None
    run_id: str
    status: str
    started_at: str
    ended_at: str | None
    duration_s: float | None
    energy_j: float
    uncertainty_rel: float
    devices: dict[str, dict[str, Any]]
    carbon_kg: float | None
    carbon_location: str | None
    carbon_source: str | None
    cost_usd: float | None
    pod: str | None = None
    namespace: str | None = None
    counted: bool = True

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class JobSummary:
    """A job added up over its nodes (see the module docstring for the rules)."""

    job_id: str
    job_name: str | None
    sources: list[str]
    nodes: list[NodeRun]
    expected_nodes: int | None
    missing_nodes: list[int] | None
    missing_count: int | None
    energy: dict[str, Any]
    carbon: dict[str, Any]
    cost: dict[str, Any]
    span: dict[str, Any]
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    elastic: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)
    second_sources: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``greenml jobs show --json``."""
        return {
            "job_id": self.job_id, "job_name": self.job_name, "sources": self.sources,
            "nodes": [n.to_dict() for n in self.nodes],
            "seen_nodes": len({_key(n) for n in self.nodes}),
            "expected_nodes": self.expected_nodes, "missing_nodes": self.missing_nodes,
            "missing_count": self.missing_count, "energy": self.energy, "carbon": self.carbon,
            "cost": self.cost, "span": self.span, "conflicts": self.conflicts,
            "elastic": self.elastic, "problems": self.problems,
            "second_sources": self.second_sources,
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobSummary:
        """The summary back from its :meth:`to_dict` (a job read from a team server).

        Raises:
            KeyError, TypeError: ``data`` is not a job's JSON.
        """
        fields = {k: data[k] for k in cls.__dataclass_fields__ if k != "nodes"}
        return cls(nodes=[NodeRun(**n) for n in data["nodes"]], **fields)

    def to_listing(self) -> dict[str, Any]:
        """One line of ``greenml jobs list --json`` (and of the server's ``/api/v1/jobs``)."""
        full = self.to_dict()
        return {k: full[k] for k in LISTING_KEYS}


LISTING_KEYS = ("job_id", "job_name", "sources", "seen_nodes", "expected_nodes", "missing_count",
                "energy", "span", "problems")  # fmt: skip
"""The keys of a job in a list (``jobs list --json``, ``GET /api/v1/jobs``)."""


def _key(n: NodeRun) -> tuple[str | None, str]:
    return n.step_id, f"rank {n.node_rank}" if n.node_rank is not None else f"node {n.node}"


def node_run(record: RunRecord) -> NodeRun:
    """A run record as one node of its job."""
    job = record.job
    energy = record.energy
    devices = {
        key: {"component": comp, "name": d.name, "energy_j": d.energy_j, "method": d.method,
              "uncertainty_rel": d.uncertainty_rel}
        for comp, c in energy.components.items()
        for key, d in c.devices.items()
    }  # fmt: skip
    carbon, cost = record.carbon, record.cost
    return NodeRun(
        node=job.node if job else None, node_rank=job.node_rank if job else None,
        step_id=job.step_id if job else None, run_id=record.id, status=record.status,
        started_at=record.started_at, ended_at=record.ended_at, duration_s=record.duration_s,
        energy_j=energy.total_j, uncertainty_rel=energy.uncertainty_rel, devices=devices,
        carbon_kg=carbon.kg if carbon is not None else None,
        carbon_location=carbon.location if carbon is not None else None,
        carbon_source=carbon.source if carbon is not None else None,
        cost_usd=cost.usd if cost is not None else None,
        pod=job.pod if job else None, namespace=job.namespace if job else None,
    )  # fmt: skip


def summarize_job(job_id: str, records: Sequence[RunRecord]) -> JobSummary:
    """Add up the runs of one job (``records``: every run whose job id is ``job_id``)."""
    nodes = [node_run(r) for r in records]
    by_key: dict[tuple[str | None, str], list[NodeRun]] = {}
    for n in nodes:
        by_key.setdefault(_key(n), []).append(n)
    clashes = [(k, [n.run_id for n in ns]) for k, ns in by_key.items() if len(ns) > 1]
    conflicts: list[dict[str, Any]] = [
        {"step_id": k[0], "node": k[1], "run_ids": ids} for k, ids in clashes
    ]
    clashing = {rid for _, ids in clashes for rid in ids}
    nodes = [NodeRun(**{**n.__dict__, "counted": n.run_id not in clashing}) for n in nodes]
    nodes.sort(key=lambda n: (n.step_id or "", n.node_rank if n.node_rank is not None else 1 << 30,
                              n.node or "", n.started_at))  # fmt: skip
    problems = [
        f"{k[1]}{_step(k[0])} is claimed by {len(ids)} runs ({', '.join(ids)}): "
        "none of them is counted"
        for k, ids in clashes
    ]
    expected, elastic = _expected(records, problems)
    missing, missing_count = _missing(nodes, expected)
    if missing_count:
        shown = f" (node ranks {', '.join(map(str, missing))})" if missing else ""
        problems.append(f"{missing_count} of {expected} expected node(s) never reported{shown}")
    for n in nodes:
        if n.status in UNFINISHED:
            problems.append(f"node {n.node} (run {n.run_id}) is {n.status}: its figure is partial")
    counted = [n for n in nodes if n.counted]
    names = [r.job.job_name for r in records if r.job and r.job.job_name]
    return JobSummary(
        job_id=job_id, job_name=names[0] if names else None,
        sources=sorted({r.job.source for r in records if r.job}), nodes=nodes,
        expected_nodes=expected, missing_nodes=missing, missing_count=missing_count,
        energy=_energy(counted), carbon=_summed(counted, "carbon_kg", "kg"),
        cost=_summed(counted, "cost_usd", "usd"), span=_span(nodes), conflicts=conflicts,
        elastic=elastic, problems=problems,
    )  # fmt: skip


def _step(step_id: str | None) -> str:
    return f" of step {step_id}" if step_id is not None else ""


def _expected(
    records: Sequence[RunRecord], problems: list[str]
) -> tuple[int | None, dict[str, Any] | None]:
    """The one expected node count, or None and the elastic record when the runs disagree."""
    counts: dict[int, list[str]] = {}
    worlds: dict[int, list[str]] = {}
    for r in records:
        if r.job is not None and r.job.expected_nodes is not None:
            counts.setdefault(r.job.expected_nodes, []).append(r.id)
        if r.job is not None and r.job.world_size is not None:
            worlds.setdefault(r.job.world_size, []).append(r.id)
    if len(counts) <= 1 and len(worlds) <= 1:
        return (next(iter(counts)) if counts else None), None
    elastic = {"expected_nodes": {str(k): v for k, v in sorted(counts.items())},
               "world_size": {str(k): v for k, v in sorted(worlds.items())}}  # fmt: skip
    seen = "; ".join(f"{k} node(s) in runs {', '.join(v)}" for k, v in sorted(counts.items()))
    sizes = "; ".join(f"world size {k} in runs {', '.join(v)}" for k, v in sorted(worlds.items()))
    problems.append(
        f"the job's size changed mid-job (elastic): {seen or sizes}; missing nodes are not "
        "computed against any one size"
    )
    return None, elastic


def _missing(nodes: Sequence[NodeRun], expected: int | None) -> tuple[list[int] | None, int | None]:
    if expected is None:
        return None, None
    if all(n.node_rank is not None for n in nodes):
        seen = {n.node_rank for n in nodes}
        missing = [r for r in range(expected) if r not in seen]
        return missing, len(missing)
    distinct = len({n.node for n in nodes})
    return None, max(0, expected - distinct)


def _energy(counted: Sequence[NodeRun]) -> dict[str, Any]:
    total = sum(n.energy_j for n in counted)
    spread = math.sqrt(sum((n.energy_j * n.uncertainty_rel) ** 2 for n in counted))
    return {
        "total_j": total, "total_kwh": total / 3.6e6,
        "uncertainty_rel": spread / total if total > 0 else 0.0, "uncertainty_j": spread,
        "nodes_counted": len(counted),
        "method": "sum of the nodes' measured energy",
        "combined": "node uncertainties in quadrature (nodes measured independently)",
    }  # fmt: skip


def _summed(counted: Sequence[NodeRun], attr: str, unit: str) -> dict[str, Any]:
    known = [n for n in counted if getattr(n, attr) is not None]
    without = [n.node or n.run_id for n in counted if getattr(n, attr) is None]
    if not known:
        status = "unknown"
    elif without:
        status = "partial"
    else:
        status = "ok"
    out: dict[str, Any] = {
        "status": status, unit: sum(getattr(n, attr) for n in known) if known else None,
        "nodes_without": without,
        "method": "sum of each node's own figure (its location, intensity source and price)",
    }  # fmt: skip
    if attr == "carbon_kg":
        out["locations"] = sorted({n.carbon_location for n in known if n.carbon_location})
    return out


def _span(nodes: Sequence[NodeRun]) -> dict[str, Any]:
    starts = [_ts(n.started_at) for n in nodes if n.started_at]
    ends = [_ts(n.ended_at) for n in nodes if n.ended_at]
    if not starts:
        return {"started_at": None, "ended_at": None, "wall_s": None}
    first = min(starts)
    last = max(ends) if ends else None
    return {
        "started_at": _iso(first), "ended_at": _iso(last) if last is not None else None,
        "wall_s": last - first if last is not None else None,
        "note": "from each node's own clock",
    }  # fmt: skip


def _ts(text: str | None) -> float:
    return datetime.fromisoformat(str(text)).timestamp()


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat()

"""One job from many nodes: energy summed with its uncertainty, carbon and cost per node.

:func:`summarize_job` reads the runs of a job (one per node, each with its
``job`` block) and adds them up, saying what it could not add:

- two runs claiming the same node (same Slurm job or array task, step and node
  rank, or the same node name when no rank is known) *at the same time* are a
  *conflict*: one measurement wins (finished before unfinished, then the
  longest, then the first started) and the others are named, not counted, as
  counting both would double a node's energy. Runs of one claim one after the
  other (a restarted rank, an elastic job's rank running again in its resized
  phase) measured different energy: each counts. "After" allows the clocks of
  two machines to differ by up to :data:`CLOCK_SLACK_S`;
- a run covering a node's whole allocation (``scope: allocation``, the Slurm
  prolog) covers every step on that node: a step's run there is named, not
  counted (it measured part of the same energy);
- the expected node count is each step's own (a step narrower than the
  allocation misses no node); runs of *one* step that expect different node
  counts or world sizes make the job *elastic*: no single expected count is
  assumed, so missing nodes are not computed;
- nodes expected but never seen are listed as *missing*; runs that have not
  finished are counted with their partial figure and flagged;
- a job none of whose runs is counted has no energy figure (``energy.status``),
  never a total of 0 J.

Energy: the sum over counted nodes; its uncertainty follows
:mod:`greenml.measure.combine`: nodes measured by the same methods and device
models share their error (added linearly), others are independent (quadrature).
Carbon: each node's own figure, at its own location and intensity source; a
node without one makes the total partial (said, not guessed). Cost likewise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

from greenml.measure.combine import combine, energy_source
from greenml.record.run_record import RunRecord

UNFINISHED = ("running", "incomplete")
CLOCK_SLACK_S = 1.0
"""Runs of one claim overlapping by less than this ran one after the other (clock skew)."""


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
    job_id: str | None = None  # the run's own job id (an array task's, under `jobs show ARRAY`)
    array_task_id: str | None = None
    scope: str | None = None
    not_counted_why: str | None = None
    carbon_uncertainty_rel: float | None = None
    cost_uncertainty_rel: float | None = None

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
    scheduler: str | None = None  # "slurm": a Slurm job, even where --job named it
    state: str | None = None  # the scheduler's word on how the job ended (sacct's State)

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``greenml jobs show --json``."""
        return {
            "job_id": self.job_id, "job_name": self.job_name, "sources": self.sources,
            "nodes": [n.to_dict() for n in self.nodes],
            "seen_nodes": len({_where(n) for n in self.nodes}),
            "expected_nodes": self.expected_nodes, "missing_nodes": self.missing_nodes,
            "missing_count": self.missing_count, "energy": self.energy, "carbon": self.carbon,
            "cost": self.cost, "span": self.span, "conflicts": self.conflicts,
            "elastic": self.elastic, "problems": self.problems,
            "second_sources": self.second_sources, "scheduler": self.scheduler,
            "state": self.state,
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobSummary:
        """The summary back from its :meth:`to_dict` (a job read from a team server).

        Raises:
            KeyError, TypeError: ``data`` is not a job's JSON.
        """
        optional = ("scheduler", "state", "conflicts", "elastic", "problems", "second_sources")
        fields = {k: data[k] for k in cls.__dataclass_fields__
                  if k != "nodes" and (k in data or k not in optional)}  # fmt: skip
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


def _claim(n: NodeRun) -> tuple[str | None, str | None, str]:
    """What one run claims: its own job (array task), its step, its node rank or name."""
    return (n.job_id, *_key(n))


def _where(n: NodeRun) -> tuple[str | None, str]:
    """The machine a run measured (name first: ranks are relative to a step)."""
    return n.job_id, f"node {n.node}" if n.node else f"rank {n.node_rank}"


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
        job_id=job.job_id if job else None, array_task_id=job.array_task_id if job else None,
        scope=job.scope if job else None,
        carbon_uncertainty_rel=carbon.uncertainty_rel if carbon is not None else None,
        cost_uncertainty_rel=cost.uncertainty_rel if cost is not None else None,
    )  # fmt: skip


def summarize_job(job_id: str, records: Sequence[RunRecord]) -> JobSummary:
    """Add up the runs of one job (``records``: every run whose job id is ``job_id``, or
    every task's of an array job)."""
    nodes = [node_run(r) for r in records]
    nodes.sort(key=lambda n: (n.job_id or "", n.step_id or "",
                              n.node_rank if n.node_rank is not None else 1 << 30,
                              n.node or "", n.started_at))  # fmt: skip
    problems: list[str] = []
    nodes, conflicts = _resolve_conflicts(nodes, problems)
    nodes = _covered_by_allocation(nodes)
    expected, missing, missing_count, elastic = _expected_and_missing(records, nodes, problems)
    for n in nodes:
        if n.status in UNFINISHED:
            problems.append(f"node {n.node} (run {n.run_id}) is {n.status}: its figure is partial")
    counted = [n for n in nodes if n.counted]
    if nodes and not counted:
        problems.append(f"none of the job's {len(nodes)} run(s) is counted: no energy figure")
    names = [r.job.job_name for r in records if r.job and r.job.job_name]
    interrupted = [n.run_id for n in nodes if n.status == "interrupted"]
    if interrupted:
        problems.append(f"the job was stopped before its end: {len(interrupted)} run(s) "
                        f"interrupted ({', '.join(interrupted)})")  # fmt: skip
    schedulers = sorted({r.job.scheduler for r in records if r.job and r.job.scheduler})
    return JobSummary(
        job_id=job_id, job_name=names[0] if names else None,
        sources=sorted({r.job.source for r in records if r.job}), nodes=nodes,
        expected_nodes=expected, missing_nodes=missing, missing_count=missing_count,
        energy=_energy(counted), carbon=_summed(counted, "carbon_kg", "kg"),
        cost=_summed(counted, "cost_usd", "usd"), span=_span(nodes), conflicts=conflicts,
        elastic=elastic, problems=problems, scheduler=schedulers[0] if schedulers else None,
    )  # fmt: skip


def _resolve_conflicts(
    nodes: list[NodeRun], problems: list[str]
) -> tuple[list[NodeRun], list[dict[str, Any]]]:
    """One run per claim counts (see the module docstring); the others are named."""
    by_claim: dict[tuple[str | None, str | None, str], list[NodeRun]] = {}
    for n in nodes:
        by_claim.setdefault(_claim(n), []).append(n)
    at_once = [(claim, runs) for claim, all_runs in by_claim.items()
               for runs in _at_the_same_time(all_runs)]  # fmt: skip
    losers: dict[str, str] = {}
    conflicts: list[dict[str, Any]] = []
    for claim, runs in at_once:
        if len(runs) < 2:
            continue
        winner = min(runs, key=lambda n: (n.status in UNFINISHED, -(n.duration_s or 0.0),
                                          n.started_at))  # fmt: skip
        others = [n.run_id for n in runs if n is not winner]
        for rid in others:
            losers[rid] = f"{claim[2]}{_step(claim[1])} is measured by run {winner.run_id}"
        conflicts.append({"step_id": claim[1], "node": claim[2],
                          "run_ids": [n.run_id for n in runs], "counted": winner.run_id,
                          "not_counted": others})  # fmt: skip
        problems.append(f"{claim[2]}{_step(claim[1])} is claimed by {len(runs)} runs: "
                        f"{winner.run_id} counted, {', '.join(others)} not counted")  # fmt: skip
    out = [replace(n, counted=False, not_counted_why=losers[n.run_id]) if n.run_id in losers
           else n for n in nodes]  # fmt: skip
    return out, conflicts


def _at_the_same_time(runs: list[NodeRun]) -> list[list[NodeRun]]:
    """``runs`` in groups that overlap in time (an unfinished run: from its start on)."""
    groups: list[list[NodeRun]] = []
    group_end = -float("inf")
    for n in sorted(runs, key=lambda n: _ts(n.started_at) if n.started_at else -float("inf")):
        start = _ts(n.started_at) if n.started_at else -float("inf")
        end = _ts(n.ended_at) if n.ended_at and n.status not in UNFINISHED else float("inf")
        if groups and start < group_end - CLOCK_SLACK_S:
            groups[-1].append(n)
            group_end = max(group_end, end)
        else:
            groups.append([n])
            group_end = end
    return groups


def _covered_by_allocation(nodes: list[NodeRun]) -> list[NodeRun]:
    """A step's run on a node whose whole allocation a counted run measures is not counted."""
    whole = {_where(n): n.run_id for n in nodes if n.counted and n.scope == "allocation"}
    out = []
    for n in nodes:
        cover = whole.get(_where(n)) if n.scope != "allocation" else None
        if n.counted and cover is not None:
            why = f"inside run {cover}, which measures this node for the whole allocation"
            n = replace(n, counted=False, not_counted_why=why)
        out.append(n)
    return out


def _step(step_id: str | None) -> str:
    return f" of step {step_id}" if step_id is not None else ""


def _expected_and_missing(
    records: Sequence[RunRecord], nodes: Sequence[NodeRun], problems: list[str]
) -> tuple[int | None, list[int] | None, int | None, dict[str, Any] | None]:
    """Expected nodes, missing ranks and count, per job (array task) and step, added up.

    The job's expected count is its allocation's (a prolog's runs), else its widest step's.
    """
    groups: dict[tuple[str | None, str | None], list[RunRecord]] = {}
    for r in records:
        if r.job is not None:
            groups.setdefault((r.job.job_id, r.job.step_id), []).append(r)
    expected_by_job: dict[str | None, int] = {}
    missing_all: list[int] = []
    missing_total = 0
    elastic: dict[str, Any] | None = None
    unknown = False
    for (job, step), runs in sorted(groups.items(), key=lambda kv: (kv[0][0] or "",
                                                                    kv[0][1] or "")):  # fmt: skip
        expected, group_elastic = _expected(runs, problems, step)
        if group_elastic is not None:
            elastic = group_elastic
            unknown = True
            continue
        if expected is None:
            unknown = True
            continue
        allocation = step is None
        if allocation or expected > expected_by_job.get(job, 0):
            expected_by_job[job] = expected if allocation else max(expected,
                                                                    expected_by_job.get(job, 0))
        mine = [n for n in nodes if n.job_id == job and n.step_id == step]
        missing, count = _missing(mine, expected)
        if count:
            shown = f" (node ranks {', '.join(map(str, missing))})" if missing else ""
            problems.append(f"{count} of {expected} expected node(s){_step(step)} never "
                            f"reported{shown}")  # fmt: skip
            missing_total += count
            missing_all += missing or []
    if unknown and not expected_by_job:
        return None, None, None, elastic
    total = sum(expected_by_job.values())
    one_group = len(groups) == 1
    return total, (missing_all if one_group else None) if not unknown else None, \
        (missing_total if not unknown else None), elastic  # fmt: skip


def _expected(
    records: Sequence[RunRecord], problems: list[str], step: str | None = None
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
        f"the job's size changed mid-job{_step(step)} (elastic): {seen or sizes}; missing nodes "
        "are not computed against any one size"
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
    spread = combine(
        (energy_source(n.devices.values()) or n.run_id, n.energy_j * n.uncertainty_rel)
        for n in counted
    )
    return {
        "status": "ok" if counted else "none counted",
        "total_j": total, "total_kwh": total / 3.6e6,
        "uncertainty_rel": spread / total if total > 0 else 0.0, "uncertainty_j": spread,
        "nodes_counted": len(counted),
        "method": "sum of the nodes' measured energy",
        "combined": "nodes measured by the same methods and models add linearly (a shared "
        "error), others in quadrature (greenml.measure.combine)",
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
    total = sum(getattr(n, attr) for n in known) if known else None
    rel_attr = "carbon_uncertainty_rel" if attr == "carbon_kg" else "cost_uncertainty_rel"
    spread = combine(
        (_source(n, attr), getattr(n, attr) * (getattr(n, rel_attr) or 0.0)) for n in known
    )
    out: dict[str, Any] = {
        "status": status, unit: total,
        "uncertainty_rel": spread / total if total else None,
        "nodes_without": without,
        "method": "sum of each node's own figure (its location, intensity source and price)",
    }  # fmt: skip
    if attr == "carbon_kg":
        out["locations"] = sorted({n.carbon_location for n in known if n.carbon_location})
    return out


def _source(node: NodeRun, attr: str) -> Any:
    """A node's carbon shares its intensity's error with nodes of the same source and place;
    its cost, the energy's (the price is taken as exact)."""
    if attr == "carbon_kg":
        return ("intensity", node.carbon_source, node.carbon_location)
    return energy_source(node.devices.values()) or node.run_id


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

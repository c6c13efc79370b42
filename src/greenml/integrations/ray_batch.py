"""Spot-tolerant batch inference on Ray: blocks, retries elsewhere, energy and cost per item.

:func:`run_batch_inference` splits the items into blocks with stable ids
(``0 … n-1``, in input order) and runs each block as a plain Ray task. A block
whose node or worker died (:func:`retried_errors`) is retried by Ray
(``ray_max_retries``) and, past that, resubmitted by the driver (``max_retries``),
so a preempted node's blocks land on the nodes left. Results are kept by block
id, the first finished attempt wins, a second finish is counted and dropped:
each item's result appears once, in input order.

Every attempt tells a log actor on the driver's node (RayEnergy's
:class:`~greenml.integrations.ray.TaskLog` when there is one) where it started,
and returns its node and times with its results. With a
:class:`~greenml.integrations.ray.RayEnergy`, the attempts are its tasks: each
one's energy is its node's power shared by time overlap, the winning attempts'
energy is useful, the lost attempts' energy is wasted. A node
that died with its meter counts up to its last progress report; an attempt on
it that no report covers is estimated (mean attributed power of the attempts on
live nodes × that time) and labelled so.

Plain Ray tasks, not ``ray.data``: Ray Data retries lost blocks inside its
executor without telling which block ran where or how often, so neither the
exactly-once bookkeeping by block id nor the per-attempt energy would be ours
to state.

Lazy imports: ray, when used.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from greenml.errors import ConfigError
from greenml.integrations.ray import RayEnergy, RayJobReport, start_task_log

PredictFn = Callable[[list[Any]], Sequence[Any]]
TASK_NAME = "block"
WASTE_ESTIMATE = "mean attributed power of the attempts on live nodes x the uncovered time"


def retried_errors() -> tuple[type[BaseException], ...]:
    """The Ray errors that mean the work was lost, not wrong: the block is retried."""
    from ray.exceptions import ActorDiedError, NodeDiedError, WorkerCrashedError

    return (NodeDiedError, WorkerCrashedError, ActorDiedError)


@dataclass(frozen=True)
class Attempt:
    """One try of one block: where and when it ran, whether its result was kept."""

    attempt_id: str
    block_id: int
    node_id: str
    start_s: float
    end_s: float
    finished: bool  # it returned (``False``: died with its worker or node)
    kept: bool  # its result is the block's result
    energy_j: float | None = None  # attributed (+ estimated_j); ``None``: no RayEnergy
    estimated_j: float = 0.0  # the part past its lost node's last report


@dataclass(frozen=True)
class BatchReport:
    """What a batch cost: items, blocks, retries, energy and cost per item.

    ``energy_j`` is the attributed energy of every attempt (useful + wasted);
    ``node_energy_j`` is what the measured nodes drew over the job, idle included.
    """

    items: int
    blocks: int
    attempts: int
    retries: int
    resubmissions: int  # the retries the driver made after Ray's own ran out
    duplicate_finishes: int
    energy_j: float | None = None
    useful_energy_j: float | None = None
    wasted_energy_j: float | None = None
    wasted_method: str | None = None  # ``attributed``, or ``attributed + estimated``
    estimated_attempts: int = 0  # attempts that ran past their lost node's last report
    estimated_energy_j: float = 0.0  # their estimated part (in energy_j too)
    energy_per_item_j: float | None = None
    node_energy_j: float | None = None
    method: str | None = None  # ``attributed (<weakest node method>)``
    uncertainty_rel: float | None = None  # the node measurements'; the split is a model
    attribution: str | None = None
    lost_nodes: tuple[str, ...] = ()
    cost_usd: float | None = None
    cost_per_item_usd: float | None = None
    cost_method: str | None = None
    job_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["lost_nodes"] = list(self.lost_nodes)
        return out


@dataclass(frozen=True)
class BatchResult:
    """Each item's result once, in input order, with the report and every attempt."""

    results: list[Any]
    report: BatchReport
    attempts: list[Attempt]


def _run_block(
    predict_fn: PredictFn, block_id: int, items: list[Any], log: Any
) -> tuple[int, str, str, float, float, list[Any]]:
    """One attempt of one block, on a Ray worker: logged when it starts (in case it is
    lost), its node and times returned with its results when it finishes."""
    import ray

    attempt_id = f"{block_id}-{uuid.uuid4().hex[:12]}"  # fresh on each Ray retry too
    node_id = ray.get_runtime_context().get_node_id()
    start = time.time()
    log.started.remote(attempt_id, block_id, node_id, start)  # not awaited: no round trip
    out = list(predict_fn(items))
    return block_id, attempt_id, node_id, start, time.time(), out


def run_batch_inference(
    items: Sequence[Any],
    predict_fn: PredictFn,
    *,
    block_size: int,
    energy: RayEnergy | None = None,
    max_retries: int = 3,
    ray_max_retries: int = 1,
    num_cpus: float = 1.0,
    price_per_kwh_usd: float | None = None,
    instance_usd_per_hour: float | None = None,
) -> BatchResult:
    """Run ``predict_fn`` over ``items`` block by block on the Ray cluster, spot-tolerant.

    Args:
        items: The inputs; the results come back in this order, one per item.
        predict_fn: Maps a block (a list of items) to one result per item;
            picklable (a module-level function).
        block_size: Items per block (the last block may be shorter).
        energy: Measures the nodes; started here if it is not, finished here
            (its report at ``energy.report``); left running if the batch fails.
        max_retries: Driver resubmissions of a block after Ray's own retries.
        ray_max_retries: Ray's ``max_retries`` for each block task.
        num_cpus: CPUs each block task asks for.
        price_per_kwh_usd: Cost from the energy of every attempt.
        instance_usd_per_hour: Cost from node-hours (each measured or lost
            node, for the job's wall-clock time); ignored with a kWh price.

    Raises:
        ConfigError: A bad argument, or ``predict_fn`` returned the wrong count.
        ray.exceptions.RayError: A block still lost after every retry; an
            error raised by ``predict_fn`` itself (not retried).
    """
    import ray

    if block_size < 1 or max_retries < 0 or ray_max_retries < 0:
        raise ConfigError("block_size must be >= 1 and retries >= 0")
    if not ray.is_initialized():
        raise ConfigError("run_batch_inference needs a Ray cluster: call ray.init() first")
    if energy is not None and not energy.started:
        energy.start()
    blocks = [list(items[i : i + block_size]) for i in range(0, len(items), block_size)]
    # RayEnergy's log when there is one: starting an actor costs a process
    log = energy.task_log if energy is not None else start_task_log()
    task = ray.remote(_run_block).options(
        num_cpus=num_cpus, max_retries=ray_max_retries, retry_exceptions=False
    )
    alive = [n for n in ray.nodes() if n.get("Alive")]  # type: ignore[no-untyped-call]
    nodes = len(alive)
    started = time.time()
    fn_ref = ray.put(predict_fn)
    pending = {task.remote(fn_ref, b, block, log): (b, 0) for b, block in enumerate(blocks)}
    results: dict[int, tuple[str, list[Any]]] = {}
    resubmissions = duplicates = 0
    failed_at: dict[int, list[float]] = {}  # when the driver saw a block's attempt lost
    finished: dict[str, list[Any]] = {}  # attempt id -> block id, node id, start, end
    try:
        while pending:
            # the blocks ready within 20 ms, at once: a wait per batch, not per block
            done, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0.02)
            for ref in done:
                block_id, tries = pending.pop(ref)
                try:
                    _, attempt_id, node_id, start_s, end_s, out = ray.get(ref)
                except retried_errors():
                    failed_at.setdefault(block_id, []).append(time.time())
                    if tries >= max_retries:
                        raise
                    resubmissions += 1
                    again = task.remote(fn_ref, block_id, blocks[block_id], log)
                    pending[again] = (block_id, tries + 1)
                    continue
                finished[attempt_id] = [block_id, node_id, start_s, end_s]
                if block_id in results:
                    duplicates += 1
                    continue
                if len(out) != len(blocks[block_id]):
                    raise ConfigError(f"predict_fn returned {len(out)} results for a block of "
                                      f"{len(blocks[block_id])} items")  # fmt: skip
                results[block_id] = (attempt_id, out)
        wall_s = time.time() - started
        logged = {k: [*v, None] for k, v in ray.get(log.all_started.remote()).items()}
        attempts = _attempts({**logged, **finished}, results, failed_at, time.time())
    finally:
        for ref in pending:  # after an error: the other blocks are not wanted any more
            ray.cancel(ref)
        if energy is None:
            ray.kill(log)
    job = None
    if energy is not None:
        energy.log_tasks([(a.attempt_id, TASK_NAME, a.node_id, a.start_s, a.end_s)
                          for a in attempts])  # fmt: skip
        job = energy.finish()
        attempts = attempt_energy(attempts, job, energy.progress_s)
    report = _report(len(items), len(blocks), attempts, resubmissions, duplicates, job,
                     price_per_kwh_usd, instance_usd_per_hour, wall_s, nodes)  # fmt: skip
    flat = [r for b in range(len(blocks)) for r in results[b][1]]
    return BatchResult(flat, report, attempts)


def _attempts(
    rows: dict[str, list[Any]], results: dict[int, tuple[str, list[Any]]],
    failed_at: dict[int, list[float]], now: float,
) -> list[Attempt]:  # fmt: skip
    """Every logged attempt; one that died ends when the driver saw it lost or, for a
    retry Ray made on its own, when the block's next attempt began (an upper bound)."""
    by_block: dict[int, list[float]] = {b: list(t) for b, t in failed_at.items()}
    for block_id, _node, start, _end in rows.values():
        by_block.setdefault(block_id, []).append(start)
    out = []
    for attempt_id, (block_id, node_id, start, end) in sorted(rows.items(), key=lambda r: r[1][2]):
        finished = end is not None
        if end is None:
            later = [s for s in by_block[block_id] if s > start]
            end = min(later, default=now)
        kept = results.get(block_id, ("",))[0] == attempt_id
        out.append(Attempt(attempt_id, block_id, node_id, start, end, finished, kept))
    return out


def attempt_energy(attempts: list[Attempt], job: RayJobReport, progress_s: float) -> list[Attempt]:
    """Each attempt's attributed energy, plus an estimate for its time no meter covered.

    A lost node's meter reported up to ``end_s`` and was dead by ``end_s +
    progress_s`` (it missed its next report): an attempt there ends by then, and
    its time past ``end_s`` gets the mean attributed power of the attempts on
    live nodes.
    """
    found = {t.task_id: t.energy_j for t in job.tasks if t.name == TASK_NAME}
    lost = set(job.lost_nodes)
    covered = {n["node_id"]: float(n["end_s"]) for n in job.nodes}
    live = [a for a in attempts if a.node_id not in lost]
    seconds = sum(a.end_s - a.start_s for a in live)
    mean_w = sum(found.get(a.attempt_id, 0.0) for a in live) / seconds if seconds > 0 else 0.0
    out = []
    for a in attempts:
        estimated = 0.0
        if a.node_id in lost:
            seen = covered.get(a.node_id, a.start_s)
            a = replace(a, end_s=max(a.start_s, min(a.end_s, seen + progress_s)))
            estimated = mean_w * max(0.0, a.end_s - max(a.start_s, seen))
        energy = found.get(a.attempt_id, 0.0) + estimated
        out.append(replace(a, energy_j=energy, estimated_j=estimated))
    return out


def _report(
    items: int, blocks: int, attempts: list[Attempt], resubmissions: int, duplicates: int,
    job: RayJobReport | None, price_kwh: float | None, price_hour: float | None, wall_s: float,
    nodes: int,
) -> BatchReport:  # fmt: skip
    retries = len(attempts) - len({a.block_id for a in attempts})
    base = BatchReport(items, blocks, len(attempts), max(retries, resubmissions), resubmissions,
                       duplicates)  # fmt: skip
    if job is None:
        return _with_cost(base, None, price_kwh, price_hour, wall_s, nodes)
    useful = sum(a.energy_j or 0.0 for a in attempts if a.kept)
    wasted = sum(a.energy_j or 0.0 for a in attempts if not a.kept)
    estimated = [a for a in attempts if a.estimated_j > 0]
    total = useful + wasted
    methods = sorted({n["method"] for n in job.nodes})
    report = replace(
        base, energy_j=total, useful_energy_j=useful, wasted_energy_j=wasted,
        wasted_method="attributed + estimated" if estimated else "attributed",
        estimated_attempts=len(estimated), estimated_energy_j=sum(a.estimated_j for a in attempts),
        energy_per_item_j=total / items if items else None, node_energy_j=job.total_j,
        method=f"attributed ({', '.join(methods)})",
        uncertainty_rel=max((float(n["uncertainty_rel"]) for n in job.nodes), default=0.0),
        attribution=job.attribution + (f"; past a lost node's last report: {WASTE_ESTIMATE}"
                                       if estimated else ""),
        lost_nodes=tuple(job.lost_nodes), job_id=job.job_id,
    )  # fmt: skip
    return _with_cost(report, total, price_kwh, price_hour, wall_s, nodes)


def _with_cost(
    report: BatchReport, energy_j: float | None, price_kwh: float | None,
    price_hour: float | None, wall_s: float, nodes: int,
) -> BatchReport:  # fmt: skip
    if price_kwh is not None and energy_j is not None:
        cost, method = energy_j / 3.6e6 * price_kwh, f"energy x {price_kwh} USD/kWh"
    elif price_hour is not None and nodes:
        cost = price_hour * nodes * wall_s / 3600
        method = f"{nodes} nodes x {wall_s:.1f} s x {price_hour} USD/h"
    else:
        return report
    per_item = cost / report.items if report.items else None
    return replace(report, cost_usd=cost, cost_per_item_usd=per_item, cost_method=method)

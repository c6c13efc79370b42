"""What both run drivers do at a run's end, written once.

``greenml run`` (:mod:`greenml.run.runner`, a child process) and ``greenml.Run``
(:mod:`greenml.run.inprocess`, a thread and events) both turn a finished
measurement into the same blocks here: accounting (carbon, cost, market-based,
water, embodied), progress and projection, FLOPs (counted in the program, else
the ``flops=`` and ``samples=`` tags) and the budget. This is the first piece of
the one ``RunSession`` both drivers will drive.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from greenml.accounting.run_accounting import Accounting
    from greenml.measure.measurement import Measurement
    from greenml.record.run_record import RunRecord
    from greenml.run.projection import ProgressTracker
    from greenml.run.recorder import Recorder

log = logging.getLogger("greenml")

DEFAULT_CPU_SCOPE = "process"
"""Both drivers measure the CPU/DRAM of the process tree that does the work by default."""


def finish_blocks(
    accounting: Accounting,
    measurement: Measurement,
    timelines: Mapping[str, Any],
    tracker: ProgressTracker,
    tags: Mapping[str, str],
    budget: dict[str, Any] | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    """The blocks a finished run adds to its record, the same under both drivers."""
    from greenml.accounting.run_accounting import account_safely, effective_rates
    from greenml.measure.measurement import NODE

    # a node meter's timeline is the whole machine: not one more device to add in
    timelines = {k: v for k, v in timelines.items() if not k.startswith(NODE)}
    blocks: dict[str, Any] = dict(account_safely(accounting, measurement, dict(timelines)))
    progress = tracker.summary(**effective_rates(blocks, measurement.total_kwh))
    if progress is not None:
        blocks["progress"] = progress
    flops = flops_block(tracker, measurement, tags)
    if flops is not None:
        blocks["flops"] = flops
    if budget is not None:
        blocks["budget"] = budget
    if tracker.llm_calls or tracker.tool_calls:
        blocks["workflow"] = workflow_block(tracker)
    policy = policy_in_force(name, tags)
    if policy is not None:
        blocks["policy"] = policy
    from greenml.measure.node.balance import run_node_block

    node = run_node_block(measurement)  # node meter (or calibration), components, residual
    if node is not None:
        blocks["node"] = node
    return blocks


def policy_in_force(name: str | None, tags: Mapping[str, str]) -> dict[str, Any] | None:
    """The ``policy`` block: the savings policy items of the config file that apply to this
    run (:func:`greenml.savings.policy.policy_block`). A bug here costs only this block."""
    try:
        from greenml.savings.policy import policy_block

        return policy_block(name or tags.get("workload"))
    except Exception as exc:
        log.warning("greenml: policy block not recorded: %r", exc)
        return None


def workflow_block(tracker: ProgressTracker) -> dict[str, Any]:
    """The ``workflow`` block of a program's model and tool calls (its ``llm_call`` events)."""
    from greenml.llm.remote.collector import Collector

    return Collector.from_events(tracker.llm_calls, tracker.tool_calls).block()


def sends_to_server() -> bool:
    """Whether a team server is configured: a run then waits for its store at the end, so
    that it is stored and sent before greenml returns (never left to a detached writer)."""
    try:
        from greenml.run.server_settings import server_settings

        return server_settings() is not None
    except Exception:
        return False


def done_line(record: RunRecord | None, run_id: str | None, store_url: str | None,
              sent: str | None, error: str | None = None) -> str:  # fmt: skip
    """The one line a run's end says of what was done with it (stored, sent, or not)."""
    from greenml.quantities.energy import joules_text

    if record is None:
        return f"greenml: run {run_id or '-'} not stored" + (f": {error}" if error else "")
    name = f" {record.name!r}" if record.name else ""
    where = f" in {store_url}" if store_url else ""
    line = (f"greenml: run {record.id}{name} {record.status}, "
            f"{joules_text(record.energy.total_j or 0.0)}; stored{where}")  # fmt: skip
    return line + (f", {sent}" if sent else "")


def recorder_line(record: RunRecord | None, recorder: Recorder) -> str:
    """:func:`done_line` of a run its recorder stored (or did not)."""
    error = None if recorder.error is None else str(recorder.error)
    return done_line(record, recorder.run_id, recorder.store_url, recorder.sent, error)


def flops_block(
    tracker: ProgressTracker, measurement: Measurement, tags: Mapping[str, str]
) -> dict[str, Any] | None:
    """The ``flops`` block: counted in the program (a ``flops`` event), else ``flops=`` and
    ``samples=`` tags; ``None`` when neither. A bug here costs only this block."""
    if not tracker.flops and "flops" not in tags:
        return None  # neither: the FLOP counter's module is not imported
    try:
        from greenml.measure.flops import flops_block as build
        from greenml.measure.flops import flops_from_tags, merge_ranks

        gpus = measurement.components.get("gpu")
        names = [d.name or key for key, d in (gpus.devices if gpus else {}).items()]
        duration_s, energy_j = measurement.duration_s, measurement.total_j
        if tracker.flops:
            counted = merge_ranks(tracker.flops)  # each rank counts its share of the work
            return build(counted, duration_s=duration_s, energy_j=energy_j, gpus=names)
        given = flops_from_tags(tags)
        if given is None:
            return None
        return build(given, duration_s=duration_s, energy_j=energy_j, gpus=names,
                     method="given", source=given["source"])  # fmt: skip
    except Exception as exc:
        log.warning("greenml: FLOPs block not computed: %r", exc)
        return {"status": "unavailable", "flops": None, "reason": f"failed: {exc!r}"}

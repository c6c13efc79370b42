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
    from greenml.run.projection import ProgressTracker

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
) -> dict[str, Any]:
    """The blocks a finished run adds to its record, the same under both drivers."""
    from greenml.accounting.run_accounting import account_safely, effective_rates

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
    return blocks


def workflow_block(tracker: ProgressTracker) -> dict[str, Any]:
    """The ``workflow`` block of a program's model and tool calls (its ``llm_call`` events)."""
    from greenml.llm.remote.collector import Collector

    return Collector.from_events(tracker.llm_calls, tracker.tool_calls).block()


def flops_block(
    tracker: ProgressTracker, measurement: Measurement, tags: Mapping[str, str]
) -> dict[str, Any] | None:
    """The ``flops`` block: counted in the program (a ``flops`` event), else ``flops=`` and
    ``samples=`` tags; ``None`` when neither. A bug here costs only this block."""
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

"""Stragglers in synchronous data parallel training: who is slow, who waits, what it costs.

Input: per-rank ``step`` windows, as events (``name``, ``rank``, ``start_s``,
``end_s``, ``energy_j``) or as stored (``name`` ``step/rank3``, ``started_at``,
``duration_s``, ``energy_j``). A ``step`` window should cover a rank's own work
between two synchronizations (begin after the collective, end before it): all
ranks then start step ``i`` together, and the slowest one sets its end. The
slack of a rank at step ``i`` is ``max_r(duration) - its duration``; the
waiting energy is its power during the step (window energy / duration) times
the slack, an upper bound, as a waiting device draws less than a busy one.
Durations, not end times, are compared: clocks of different hosts may differ.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

_RANK = re.compile(r"^(?P<base>.*)/rank(?P<rank>\d+)$")


@dataclass(frozen=True)
class Window:
    """One rank's window, normalized (Unix seconds, joules)."""

    name: str
    rank: int
    start_s: float
    duration_s: float
    energy_j: float


def parse_window(w: Mapping[str, Any]) -> Window:
    """A window dict (event or stored) as a :class:`Window`; the rank from ``rank`` or the name."""
    name = str(w["name"])
    match = _RANK.match(name)
    base = match["base"] if match else name
    rank = int(w["rank"]) if w.get("rank") is not None else int(match["rank"]) if match else 0
    if w.get("start_s") is not None:
        start = float(w["start_s"])
    else:
        started = w.get("started_at", 0.0)
        start = (
            datetime.fromisoformat(started).timestamp()
            if isinstance(started, str)
            else float(started)
        )
    if w.get("duration_s") is not None:
        duration = float(w["duration_s"])
    else:
        duration = float(w["end_s"]) - start
    return Window(base, rank, start, max(0.0, duration), float(w.get("energy_j") or 0.0))


def by_rank(windows: Sequence[Mapping[str, Any]], name: str) -> dict[int, list[Window]]:
    """The windows called ``name`` of each rank, in time order."""
    out: dict[int, list[Window]] = {}
    for raw in windows:
        w = parse_window(raw)
        if w.name == name:
            out.setdefault(w.rank, []).append(w)
    for items in out.values():
        items.sort(key=lambda w: w.start_s)
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class RankStats:
    """One rank over the matched steps."""

    rank: int
    mean_step_s: float
    mean_slack_s: float  # waited per step for the slowest rank
    total_slack_s: float
    slowest_steps: int  # steps on which this rank was the slowest
    power_w: float  # mean power while in the step window
    wait_energy_j: float


@dataclass(frozen=True)
class StragglerReport:
    """Who sets the pace, and what waiting for it costs."""

    window: str
    steps: int
    ranks: list[RankStats]
    slack_s: dict[int, list[float]]  # per rank, per step
    critical_rank: int | None  # the rank most often on the critical path
    critical_share: float  # of the steps
    step_energy_j: float
    wait_energy_j: float
    wait_fraction: float  # of the step energy
    text: str


def find_stragglers(windows: Sequence[Mapping[str, Any]], name: str = "step") -> StragglerReport:
    """The critical-path rank, each rank's slack per step and the energy spent waiting.

    Step ``i`` is the ``i``-th ``name`` window of each rank; steps that not
    every rank has are left out.
    """
    ranks = by_rank(windows, name)
    steps = min((len(v) for v in ranks.values()), default=0)
    slack: dict[int, list[float]] = {r: [] for r in ranks}
    wait_j = dict.fromkeys(ranks, 0.0)
    slowest = dict.fromkeys(ranks, 0)
    for i in range(steps):
        row = {r: ws[i] for r, ws in ranks.items()}
        longest = max(w.duration_s for w in row.values())
        slowest[max(row, key=lambda r: row[r].duration_s)] += 1
        for r, w in row.items():
            s = longest - w.duration_s
            slack[r].append(s)
            if w.duration_s > 0:
                wait_j[r] += w.energy_j / w.duration_s * s
    stats = []
    for r, ws in ranks.items():
        used = ws[:steps]
        busy_s = sum(w.duration_s for w in used)
        energy = sum(w.energy_j for w in used)
        stats.append(RankStats(
            rank=r,
            mean_step_s=busy_s / steps if steps else 0.0,
            mean_slack_s=sum(slack[r]) / steps if steps else 0.0,
            total_slack_s=sum(slack[r]),
            slowest_steps=slowest[r],
            power_w=energy / busy_s if busy_s > 0 else 0.0,
            wait_energy_j=wait_j[r],
        ))  # fmt: skip
    step_j = sum(w.energy_j for ws in ranks.values() for w in ws[:steps])
    total_wait = sum(wait_j.values())
    critical = max(slowest, key=lambda r: slowest[r]) if steps and len(ranks) > 1 else None
    share = slowest[critical] / steps if critical is not None else 0.0
    return StragglerReport(
        window=name, steps=steps, ranks=stats, slack_s=slack, critical_rank=critical,
        critical_share=share, step_energy_j=step_j, wait_energy_j=total_wait,
        wait_fraction=total_wait / (step_j + total_wait) if step_j + total_wait > 0 else 0.0,
        text=_text(name, steps, len(ranks), critical, share, stats, total_wait, step_j),
    )  # fmt: skip


def _text(
    name: str, steps: int, n_ranks: int, critical: int | None, share: float,
    stats: list[RankStats], wait_j: float, step_j: float,
) -> str:  # fmt: skip
    if critical is None:
        return f"no straggler analysis: {n_ranks} rank(s) with {steps} common {name!r} windows"
    others = [s for s in stats if s.rank != critical]
    mean_wait = sum(s.mean_slack_s for s in others) / len(others)
    crit = next(s for s in stats if s.rank == critical)
    pct = 100 * wait_j / (step_j + wait_j) if step_j + wait_j > 0 else 0.0
    return (
        f"rank {critical} is on the critical path in {share:.0%} of {steps} steps "
        f"({crit.mean_step_s:.3g} s per step); the other ranks wait {mean_wait:.3g} s per "
        f"step on average, about {wait_j / 1000:.3g} kJ ({pct:.1f} % of the step energy)"
    )

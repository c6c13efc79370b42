"""Interruptible jobs: the cheapest pieces under a minimum piece length and a piece count.

The allowed span is cut into equal slots of ``q`` seconds from the earliest
start; each slot's cost is the exact integral of the series over it (partial
steps included). A dynamic programme over the slots then chooses which run,
with state (pieces started, slots used, length of the current piece capped at
the minimum): a piece may stop only once it has reached the minimum length, a
new piece may start only after at least one idle slot, and the count of pieces
stays within the limit. The result is the optimum on that slot grid.

``q`` is the largest step that keeps the plan exact: the greatest common
divisor of the series' step, the duration, the minimum piece and the offset of
the earliest start on the series' grid (whole seconds). When that grid would
make the programme too large, ``q`` is coarsened; the duration is then rounded
up to whole slots and the surplus trimmed off the dearest piece ends (never
below the minimum), and :class:`Pieces` says so in ``note``. The caller also
compares with the best contiguous window (always a valid plan) and keeps the
better one.

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from greenml.accounting.series import StepSeries
from greenml.errors import ConfigError
from greenml.schedule.window import Integral

# Most (slots × states) the programme may visit: about a second of numpy work.
STATE_BUDGET = 3_000_000
_INF = math.inf


@dataclass(frozen=True)
class Pieces:
    """The chosen pieces and the series' mean over them.

    Attributes:
        spans_s: (start, end) of each piece, Unix seconds, in time order.
        mean: Time-weighted mean of the series over all pieces.
        slot_s: The slot length the programme used.
        note: How the grid was chosen when it is not exact, else ``""``.
    """

    spans_s: tuple[tuple[float, float], ...]
    mean: float
    slot_s: float
    note: str = ""


def slot_length(
    series_step_s: float, origin_s: float, earliest_s: float, duration_s: float,
    min_chunk_s: float, span_s: float, pieces: int,
) -> float:  # fmt: skip
    """The slot length: exact (gcd in whole seconds) unless that exceeds the budget."""
    step = max(1, round(series_step_s)) if math.isfinite(series_step_s) else 3600
    offset = round(earliest_s - origin_s) % step if math.isfinite(origin_s) else 0
    exact = math.gcd(step, round(duration_s), round(min_chunk_s), offset) or 1
    q = float(max(exact, 60))
    while _visits(q, duration_s, min_chunk_s, span_s, pieces) > STATE_BUDGET:
        q *= 2
    return q


def best_pieces(
    series: StepSeries,
    earliest_s: float,
    latest_end_s: float,
    duration_s: float,
    min_chunk_s: float,
    max_pieces: int,
) -> Pieces | None:
    """The cheapest set of at most ``max_pieces`` pieces, each ≥ ``min_chunk_s``.

    Args:
        series: The values to minimise (intensity, price or a blended score).
        earliest_s: No piece starts before this.
        latest_end_s: Every piece ends by this.
        duration_s: Total run time of the pieces.
        min_chunk_s: Shortest piece (capped at ``duration_s``).
        max_pieces: Most pieces (≥ 1).

    Returns:
        The pieces, or ``None`` when the slot grid cannot hold the job (a span
        barely longer than the job on a coarsened grid): the contiguous
        window is then the plan.

    Raises:
        ConfigError: The series does not cover the span.
    """
    import numpy as np

    min_chunk_s = min(min_chunk_s, duration_s)
    span = latest_end_s - earliest_s
    limit = max(1, min(max_pieces, math.floor(duration_s / min_chunk_s + 1e-9)))
    origin = float(series.times_s[0]) if math.isfinite(series.times_s[0]) else earliest_s
    grid = np.diff(series.times_s)
    step = float(np.median(grid)) if len(grid) and np.isfinite(grid).all() else series.last_step_s
    q = slot_length(step, origin, earliest_s, duration_s, min_chunk_s, span, limit)
    n = math.floor(span / q + 1e-9)
    units = math.ceil(duration_s / q - 1e-9)
    least = math.ceil(min_chunk_s / q - 1e-9)
    if units > n:
        return None
    integral = Integral(series, earliest_s, latest_end_s)
    edges = earliest_s + q * np.arange(n + 1)
    cost = np.diff(integral.at(edges))
    runs = _programme(cost, units, least, limit)
    spans = [(earliest_s + a * q, earliest_s + b * q) for a, b in runs]
    surplus = units * q - duration_s
    note = ""
    if surplus > 1e-6:
        spans = _trim(spans, surplus, min_chunk_s, integral)
        note = f"pieces placed on a {q / 60:g}-minute grid, then trimmed to the duration"
    starts = np.array([a for a, _ in spans])
    ends = np.array([b for _, b in spans])
    total = float(np.sum(integral.at(ends) - integral.at(starts)))
    return Pieces(tuple(spans), total / duration_s, q, note)


def _visits(q: float, duration_s: float, min_chunk_s: float, span_s: float, pieces: int) -> float:
    units = math.ceil(duration_s / q)
    least = math.ceil(min_chunk_s / q)
    return (span_s / q) * (pieces + 1) * (units + 1) * (least + 1)


def _programme(cost: Any, units: int, least: int, limit: int) -> list[tuple[int, int]]:
    """Slot runs [a, b) of least total cost: ``units`` slots in ≤ ``limit`` runs of ≥ ``least``.

    State (p, u, r): p runs started, u slots used, r = 0 idle or the current
    run's length capped at ``least``. ``how`` records each state's
    predecessor: 0 idle←idle, 1 idle←full run, 2 start, 3 extend r-1, 4 extend full.
    """
    import numpy as np

    m = least
    n = len(cost)
    dp = np.full((limit + 1, units + 1, m + 1), _INF)
    dp[0, 0, 0] = 0.0
    how = np.zeros((n, limit + 1, units + 1, m + 1), dtype=np.int8)
    for i in range(n):
        c = float(cost[i])
        new = np.full_like(dp, _INF)
        h = how[i]
        idle, full = dp[:, :, 0], dp[:, :, m]
        new[:, :, 0] = np.minimum(idle, full)
        h[:, :, 0] = np.where(full < idle, 1, 0)
        new[1:, 1:, 1] = dp[:-1, :-1, 0] + c
        h[1:, 1:, 1] = 2
        if m >= 2:
            new[:, 1:, 2:] = dp[:, :-1, 1:m] + c
            h[:, 1:, 2:] = 3
        grow = dp[:, :-1, m] + c
        better = grow < new[:, 1:, m]
        new[:, 1:, m] = np.where(better, grow, new[:, 1:, m])
        h[:, 1:, m] = np.where(better, 4, h[:, 1:, m])
        dp = new
    ends = np.minimum(dp[:, units, 0], dp[:, units, m])
    if not np.isfinite(ends).any():
        raise ConfigError("no placement of the pieces fits the span")
    p = int(np.argmin(ends))
    state = (p, units, 0 if dp[p, units, 0] <= dp[p, units, m] else m)
    running: list[int] = []
    for i in range(n - 1, -1, -1):
        p, u, r = state
        step = int(how[i, p, u, r])
        if step == 0:
            state = (p, u, 0)
        elif step == 1:
            state = (p, u, m)
        else:
            running.append(i)
            state = (p - 1, u - 1, 0) if step == 2 else (p, u - 1, r - 1 if step == 3 else m)
    return _runs(sorted(running))


def _runs(slots: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for s in slots:
        if runs and runs[-1][1] == s:
            runs[-1] = (runs[-1][0], s + 1)
        else:
            runs.append((s, s + 1))
    return runs


def _trim(
    spans: list[tuple[float, float]], surplus: float, min_chunk_s: float, integral: Integral
) -> list[tuple[float, float]]:
    """Cut ``surplus`` seconds off piece ends, dearest end first, none below the minimum."""
    spans = list(spans)
    while surplus > 1e-6:
        best: tuple[float, int, bool, float] | None = None
        for k, (a, b) in enumerate(spans):
            room = min(surplus, (b - a) - min_chunk_s)
            if room <= 1e-9:
                continue
            head = float(integral.at(a + room) - integral.at(a)) / room
            tail = float(integral.at(b) - integral.at(b - room)) / room
            for value, at_end in ((head, False), (tail, True)):
                if best is None or value > best[0]:
                    best = (value, k, at_end, room)
        if best is None:  # cannot happen: pieces ≤ duration ÷ minimum leave enough room
            raise ConfigError("cannot trim the pieces to the duration")
        _, k, at_end, room = best
        a, b = spans[k]
        spans[k] = (a, b - room) if at_end else (a + room, b)
        surplus -= room
    return spans

"""The jobs of the two "Let's Wait Awhile" scenarios, as slot indices on a replay trace.

Scenario I (``nightly``): a 30-minute job every day at 01:00 (local), which
may start anywhere in ``[01:00 − N h, 01:00 + N h]``.

Scenario II (``ml-jobs``): training jobs spread uniformly over the workdays
(Monday–Friday), each arriving at a uniformly drawn half hour from 09:00 to
16:30 and lasting 4 h to 89.5 h in 30-minute steps. The *original finish* is
arrival + duration. Rule ``next-workday``: a finish after 17:00, before 09:00
or on a weekend may move to the next workday's 09:00; otherwise there is no
slack. Rule ``semi-weekly``: the job may finish by the next Monday or
Thursday 09:00.

Jobs whose window runs past the trace's end, or over a gap in it, are left
out and counted.

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from greenml.schedule.replay.series import HalfHourTrace

if TYPE_CHECKING:
    import numpy as np

DeadlineRule = Literal["next-workday", "semi-weekly"]
DEADLINE_RULES: tuple[DeadlineRule, ...] = ("next-workday", "semi-weekly")

NIGHTLY_MINUTE = 60  # 01:00
WORK_START_MINUTE = 9 * 60
WORK_END_MINUTE = 17 * 60
ARRIVAL_HALF_HOURS = 16  # 09:00, 09:30, … 16:30
SLOTS_PER_DAY = 48
MIN_DURATION_SLOTS = 8  # 4 h
MAX_DURATION_SLOTS = 179  # 89.5 h


@dataclass(frozen=True)
class JobSet:
    """Jobs as slot indices: each may run in slots ``[earliest, deadline)``.

    Attributes:
        arrival: Slot the job starts in without shifting (the baseline).
        duration: Slots of work.
        earliest: First slot the job may use.
        deadline: Boundary by which it must be done (exclusive slot end).
        left_out: Jobs dropped because their window leaves the trace or meets a gap.
    """

    arrival: np.ndarray[Any, Any]
    duration: np.ndarray[Any, Any]
    earliest: np.ndarray[Any, Any]
    deadline: np.ndarray[Any, Any]
    left_out: int

    def __len__(self) -> int:
        return len(self.arrival)


def nightly_jobs(trace: HalfHourTrace, window_hours: int) -> JobSet:
    """One 30-minute job a day at 01:00 local, shiftable by ±``window_hours``."""
    import numpy as np

    boundaries = np.flatnonzero(trace.minute == NIGHTLY_MINUTE)
    arrival = boundaries[boundaries < trace.n]
    # A clock set back repeats 01:00 the same night: keep the first.
    arrival = arrival[np.diff(arrival, prepend=-SLOTS_PER_DAY) > SLOTS_PER_DAY // 2]
    w = 2 * window_hours
    return _keep_inside(
        trace, arrival, np.ones_like(arrival), arrival - w, arrival + w + 1, len(arrival)
    )


def ml_jobs(
    trace: HalfHourTrace, count: int, rule: DeadlineRule, rng: np.random.Generator
) -> JobSet:
    """``count`` training jobs over the trace's workdays, with deadlines by ``rule``.

    Draws (in this order, from ``rng``): the workday, the arrival half hour
    and the duration of every job.
    """
    import numpy as np

    workday = trace.weekday < 5
    starts = np.flatnonzero(workday & (trace.minute == WORK_START_MINUTE))
    if len(starts) == 0 or count <= 0:
        empty = np.zeros(0, dtype=np.int64)
        return JobSet(empty, empty, empty, empty, max(count, 0))
    day = rng.integers(0, len(starts), size=count)
    half_hour = rng.integers(0, ARRIVAL_HALF_HOURS, size=count)
    duration = rng.integers(MIN_DURATION_SLOTS, MAX_DURATION_SLOTS + 1, size=count)
    arrival = starts[day] + half_hour
    finish = arrival + duration
    beyond = trace.n + 1  # "no such boundary inside the trace"
    inside = np.minimum(finish, trace.n)
    if rule == "next-workday":
        minute = trace.minute[inside]
        in_hours = workday[inside] & (minute >= WORK_START_MINUTE) & (minute <= WORK_END_MINUTE)
        nxt = next_marked(workday & (trace.minute == WORK_START_MINUTE), beyond)
        deadline = np.where(in_hours, finish, nxt[inside])
    else:
        monday_thursday = (trace.weekday == 0) | (trace.weekday == 3)
        deadline = next_marked(monday_thursday & (trace.minute == WORK_START_MINUTE), beyond)[
            inside
        ]
    deadline = np.where(finish > trace.n, beyond, deadline)
    return _keep_inside(trace, arrival, duration, arrival, deadline, count)


def next_marked(marked: np.ndarray[Any, Any], missing: int) -> np.ndarray[Any, Any]:
    """For each boundary, the first marked boundary at or after it (``missing`` if none)."""
    import numpy as np

    idx = np.where(marked, np.arange(len(marked)), missing)
    return np.minimum.accumulate(idx[::-1])[::-1]


def _keep_inside(
    trace: HalfHourTrace,
    arrival: np.ndarray[Any, Any],
    duration: np.ndarray[Any, Any],
    earliest: np.ndarray[Any, Any],
    deadline: np.ndarray[Any, Any],
    drawn: int,
) -> JobSet:
    """The jobs whose whole window lies inside the trace and over no gap."""
    import numpy as np

    ok = (earliest >= 0) & (deadline <= trace.n)
    nan_before = np.concatenate(([0], np.cumsum(np.isnan(trace.values))))
    a, b = np.clip(earliest, 0, trace.n), np.clip(deadline, 0, trace.n)
    ok &= nan_before[b] == nan_before[a]
    return JobSet(
        arrival[ok].astype(np.int64),
        duration[ok].astype(np.int64),
        earliest[ok].astype(np.int64),
        deadline[ok].astype(np.int64),
        int(drawn - ok.sum()),
    )

"""The published artifact's rules for scenario II (``--rules wiesner2021``).

Wiesner et al. published the code of "Let's Wait Awhile" (Middleware 2021).
Where it differs from the paper's text (profile ``text``), this profile
follows the code:

- deadline ``next-workday``: with F the unshifted finish (arrival + duration),
  F on a Saturday → Monday 09:00; F on a Sunday, or after 17:00 on any weekday
  (Friday included) → 09:00 of the next calendar day (a Friday-evening finish
  gets Saturday 09:00); F before 09:00 → 09:00 the same day; otherwise no
  slack. ``semi-weekly`` is the text's rule (the next Monday or Thursday 09:00).
- window: one half-hour slot longer than duration + slack (the forecast
  includes the current point), so a job may end 30 minutes after its
  deadline and a non-interruptible job chooses among slack + 2 starts.
- baseline: the same scheduler with zero slack on the true series (never
  interrupted): the better of starting at arrival or one slot later.
- jobs: drawn over the workdays of the trace's calendar year only, in the
  artifact's order from ``default_rng(seed)`` (jobs per day multinomial,
  each day's start half hours sorted, then the durations); none dropped. A
  window that runs past the trace's end is cut there; a job whose work runs
  past it starts at its arrival and is counted up to the end.
- forecast error: repetition ``i`` adds noise from ``default_rng(i)``, of sd
  e × the mean of the series from the year's start.

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from greenml.errors import ConfigError
from greenml.schedule.replay.jobs import (
    ARRIVAL_HALF_HOURS,
    MAX_DURATION_SLOTS,
    MIN_DURATION_SLOTS,
    SLOTS_PER_DAY,
    WORK_END_MINUTE,
    WORK_START_MINUTE,
    DeadlineRule,
    JobSet,
    next_marked,
)
from greenml.schedule.replay.place import shifted_sums
from greenml.schedule.replay.series import HalfHourTrace, local_days, when

if TYPE_CHECKING:
    import numpy as np

Rules = Literal["text", "wiesner2021"]
RULES: tuple[Rules, ...] = ("text", "wiesner2021")
EXTRA_SLOTS = 1  # the window's slot past the deadline
_EPOCH = date(1970, 1, 1).toordinal()


@dataclass(frozen=True)
class ArtifactJobs:
    """Jobs drawn under the artifact's rules, and how the trace's end touched them.

    Attributes:
        jobs: The jobs (``deadline`` is the window's end: deadline + 1 slot).
        year: The calendar year they were drawn over.
        first_slot: The first slot of that year (local time), where noise starts.
        cut: Jobs whose window was cut at the trace's end.
        truncated: Of those, jobs whose work runs past it (counted up to it, unshifted).
    """

    jobs: JobSet
    year: int
    first_slot: int
    cut: int
    truncated: int


def artifact_jobs(trace: HalfHourTrace, count: int, rule: DeadlineRule, seed: int) -> ArtifactJobs:
    """``count`` jobs over the workdays of the trace's year, windows by the artifact's rules."""
    import numpy as np

    extra = MAX_DURATION_SLOTS + 4 * SLOTS_PER_DAY  # the calendar past the end, for deadlines
    day, minute = local_days(trace.start_s, trace.n + 1 + extra, trace.tz)
    year = date.fromordinal(int(day[trace.n // 2]) + _EPOCH).year
    first_day = date(year, 1, 1).toordinal() - _EPOCH
    days = np.arange(first_day, date(year + 1, 1, 1).toordinal() - _EPOCH)
    first_slot = min(int(np.searchsorted(day, first_day)), trace.n)
    nine = _nine_of_each_day(day, minute)
    at = nine(days)
    usable = days[((days + 3) % 7 < 5) & (at >= 0) & (at + ARRIVAL_HALF_HOURS <= trace.n)]
    empty = np.zeros(0, dtype=np.int64)
    if len(usable) == 0 or count <= 0:
        return ArtifactJobs(JobSet(empty, empty, empty, empty, 0), year, first_slot, 0, 0)
    rng = np.random.default_rng(seed)
    per_day = rng.multinomial(count, [1 / len(usable)] * len(usable))
    half_hours = [np.sort(rng.choice(ARRIVAL_HALF_HOURS, size=int(k))) for k in per_day]
    arrival = (np.repeat(nine(usable), per_day) + np.concatenate(half_hours)).astype(np.int64)
    spread = MAX_DURATION_SLOTS - MIN_DURATION_SLOTS + 1
    duration = (MIN_DURATION_SLOTS + rng.choice(spread, size=count)).astype(np.int64)
    deadline = artifact_deadline(day, minute, arrival + duration, rule)
    end = deadline + EXTRA_SLOTS
    cut = end > trace.n
    run_past = arrival + duration > trace.n
    duration = np.where(run_past, trace.n - arrival, duration)
    end = np.minimum(end, trace.n)
    jobs = JobSet(arrival, duration, arrival.copy(), end, 0)
    return ArtifactJobs(jobs, year, first_slot, int(cut.sum()), int(run_past.sum()))


def artifact_deadline(
    day: np.ndarray[Any, Any],
    minute: np.ndarray[Any, Any],
    finish: np.ndarray[Any, Any],
    rule: DeadlineRule,
) -> np.ndarray[Any, Any]:
    """The deadline boundary of each unshifted finish boundary (see the module docstring).

    Args:
        day: Local day number of every boundary (far enough past the finishes).
        minute: Local minute of the day of every boundary.
        finish: The unshifted finish boundary of each job.
        rule: ``next-workday`` or ``semi-weekly``.
    """
    import numpy as np

    if rule == "semi-weekly":
        weekday = (day + 3) % 7
        marked = ((weekday == 0) | (weekday == 3)) & (minute == WORK_START_MINUTE)
        return next_marked(marked, len(day))[finish]  # type: ignore[no-any-return]
    d, m = day[finish], minute[finish]
    weekday = (d + 3) % 7
    shift = np.select(
        [weekday == 5, (weekday == 6) | (m > WORK_END_MINUTE), m < WORK_START_MINUTE],
        [2, 1, 0],
        default=-1,
    )
    nine = _nine_of_each_day(day, minute)(d + np.maximum(shift, 0))
    return np.where(shift < 0, finish, nine)  # type: ignore[no-any-return]


def artifact_baseline_sum(true: np.ndarray[Any, Any], jobs: JobSet) -> np.ndarray[Any, Any]:
    """Per job, the true sum at the better of its arrival and one slot later."""
    import numpy as np

    end = np.minimum(jobs.arrival + jobs.duration + EXTRA_SLOTS, len(true))
    zero_slack = JobSet(jobs.arrival, jobs.duration, jobs.arrival, end, 0)
    return shifted_sums(true, true[None, :], zero_slack, False)[0]  # type: ignore[no-any-return]


def artifact_forecasts(
    true: np.ndarray[Any, Any], error: float, repetitions: int, first_slot: int
) -> np.ndarray[Any, Any]:
    """One forecast per repetition: row ``i`` = true + ``default_rng(i)`` noise from ``first_slot``.

    The noise's sd is ``error`` × the mean of the series from ``first_slot``;
    slots before it (outside the year) keep their true values.
    """
    import numpy as np

    if error == 0:
        return true[None, :]
    tail = true[first_slot:]
    sd = error * float(np.mean(tail))
    out = np.repeat(true[None, :], repetitions, axis=0)
    for i in range(repetitions):
        out[i, first_slot:] = tail + np.random.default_rng(i).normal(0.0, sd, len(tail))
    return out


def check_no_gaps(trace: HalfHourTrace, first_slot: int, year: int) -> None:
    """ConfigError when the trace has a gap from the year's start on (no job is dropped)."""
    import numpy as np

    missing = np.isnan(trace.values[first_slot:])
    if missing.any():
        at = first_slot + int(np.argmax(missing))
        raise ConfigError(
            f"trace {trace.name} has {int(missing.sum())} missing half hours from "
            f"{when(trace.time_s(at))} on; --rules wiesner2021 drops no job of {year}, "
            "so it needs a trace without gaps (use --rules text, which leaves such jobs out)"
        )


def artifact_notes(drawn: ArtifactJobs, trace: HalfHourTrace) -> list[str]:
    """What the trace's end did to the jobs, in words."""
    if drawn.cut == 0:
        return []
    text = (
        f"{drawn.cut} jobs' windows run past the trace's end ({when(trace.time_s(trace.n))}) "
        "and are cut there"
    )
    if drawn.truncated:
        text += f"; {drawn.truncated} of them run past it: started at arrival, counted up to it"
    return [text]


def _nine_of_each_day(day: np.ndarray[Any, Any], minute: np.ndarray[Any, Any]) -> Any:
    """A function from local day numbers to that day's 09:00 boundary (-1 where none)."""
    import numpy as np

    marked = np.flatnonzero(minute == WORK_START_MINUTE)
    first = int(day[0])
    table = np.full(int(day[-1]) - first + 1, -1, dtype=np.int64)
    table[day[marked[::-1]] - first] = marked[::-1]  # the first 09:00 of a day wins

    def nine(days: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        idx = np.asarray(days) - first
        inside = (idx >= 0) & (idx < len(table))
        return np.where(inside, table[np.clip(idx, 0, len(table) - 1)], -1)

    return nine

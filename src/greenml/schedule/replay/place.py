"""Placing replayed jobs: where a forecast puts each job, and what it emits on the true series.

Non-interruptible jobs start where the forecast sum over their duration is
lowest (cumulative sums; one ``argmin`` per job over its possible starts, all
jobs at once). Interruptible jobs take the ``duration`` lowest-forecast slots
of their window (one ``argpartition`` per distinct duration, all forecast
draws at once). Sums are of slot values (g/kWh × slots); the caller scales
them to grams.

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from greenml.schedule.replay.jobs import JobSet

if TYPE_CHECKING:
    import numpy as np

_BLOCK_CELLS = 4_000_000  # cells of a (draws × jobs × choices) block, to bound memory


def baseline_sum(true: np.ndarray[Any, Any], jobs: JobSet) -> np.ndarray[Any, Any]:
    """Per job, the sum of true slot values from its arrival on (g/kWh × slots)."""
    c = _cumsum(true)
    return c[jobs.arrival + jobs.duration] - c[jobs.arrival]  # type: ignore[no-any-return]


def shifted_sums(
    true: np.ndarray[Any, Any],
    forecasts: np.ndarray[Any, Any],
    jobs: JobSet,
    interruptible: bool,
) -> np.ndarray[Any, Any]:
    """Per forecast draw and job, the true sum over the slots that draw picks.

    Args:
        true: The true slot values (g/kWh).
        forecasts: One row of slot values per forecast draw.
        jobs: The jobs and their windows.
        interruptible: Pick single slots, else one contiguous run.

    Returns:
        An array (draws × jobs) of sums of true slot values.
    """
    if interruptible:
        return _lowest_slots(true, forecasts, jobs)
    c = _cumsum(true)
    start = best_starts(forecasts, jobs)
    return c[start + jobs.duration] - c[start]  # type: ignore[no-any-return]


def best_starts(forecasts: np.ndarray[Any, Any], jobs: JobSet) -> np.ndarray[Any, Any]:
    """Per draw and job, the start whose forecast sum over the duration is lowest (earliest tie)."""
    import numpy as np

    c = _cumsum(np.atleast_2d(forecasts))
    draws = len(c)
    slack = jobs.deadline - jobs.duration - jobs.earliest
    out = np.empty((draws, len(jobs)), dtype=np.int64)
    width = int(slack.max()) + 1 if len(jobs) else 1
    k = np.arange(width)
    for lo, hi in _blocks(len(jobs), width * draws):
        inside = k <= slack[lo:hi, None]
        s = np.where(inside, jobs.earliest[lo:hi, None] + k, jobs.earliest[lo:hi, None])
        e = s + jobs.duration[lo:hi, None]
        sums = np.where(inside, c[:, e] - c[:, s], np.inf)
        out[:, lo:hi] = jobs.earliest[lo:hi] + np.argmin(sums, axis=2)
    return out


def _lowest_slots(
    true: np.ndarray[Any, Any], forecasts: np.ndarray[Any, Any], jobs: JobSet
) -> np.ndarray[Any, Any]:
    """Per draw and job, the true sum over the ``duration`` lowest-forecast slots of its window."""
    import numpy as np

    forecasts = np.atleast_2d(forecasts)
    out = np.empty((len(forecasts), len(jobs)))
    length = jobs.deadline - jobs.earliest
    for d in np.unique(jobs.duration):
        rows = np.flatnonzero(jobs.duration == d)
        width = int(length[rows].max())
        k = np.arange(width)
        for lo, hi in _blocks(len(rows), width * len(forecasts)):
            sel = rows[lo:hi]
            inside = k < length[sel, None]
            idx = np.where(inside, jobs.earliest[sel, None] + k, jobs.earliest[sel, None])
            t = np.where(inside, true[idx], 0.0)
            if d == width:  # no slack anywhere in the group: every slot of the window
                out[:, sel] = t.sum(axis=1)
                continue
            f = np.where(inside, forecasts[:, idx], np.inf)
            pick = np.argpartition(f, int(d) - 1, axis=2)[:, :, : int(d)]
            out[:, sel] = np.take_along_axis(np.broadcast_to(t, f.shape), pick, axis=2).sum(axis=2)
    return out


def _cumsum(values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``[0, v0, v0+v1, …]`` along the last axis, NaN counted as 0 (jobs never span NaN)."""
    import numpy as np

    v = np.nan_to_num(values, nan=0.0)
    zero = np.zeros((*v.shape[:-1], 1))
    return np.concatenate((zero, np.cumsum(v, axis=-1)), axis=-1)


def _blocks(rows: int, width: int) -> list[tuple[int, int]]:
    step = max(1, _BLOCK_CELLS // max(width, 1))
    return [(lo, min(lo + step, rows)) for lo in range(0, rows, step)]

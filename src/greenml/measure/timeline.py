"""A power timeline that answers "how many joules between a and b" in O(log n).

Samples are (time, watts) points. Power between two points is linear (the
trapezoid rule); before the first point and after the last it is held
constant. A running integral is kept as samples arrive, so the energy of any
window is two binary searches and a little arithmetic, however long the run.

A long-lived owner (a server's Meter) bounds memory with :meth:`PowerTimeline.trim`:
it drops old samples but never rebases the running integral, so every query at
or after the trim time gives exactly the answer it gave before.
"""

from __future__ import annotations

import threading
from array import array
from bisect import bisect_right
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    _Arrays = tuple[array[float], array[float], array[float]]  # times, powers, cumulative J


class PowerTimeline:
    """Append-mostly (time_s, power_w) samples with their running integral.

    One thread may append (or trim) while others read without a lock: the
    three arrays are swapped as one tuple by :meth:`trim`, and readers take
    the tuple and ``len`` once, then only look below it.
    """

    __slots__ = ("_arrays", "_lock")

    def __init__(self) -> None:
        # cum: energy in joules from the first sample ever appended to each sample
        self._arrays: _Arrays = (array("d"), array("d"), array("d"))
        self._lock = threading.Lock()  # append vs trim; readers never take it

    def __len__(self) -> int:
        return len(self._arrays[0])

    def append(self, time_s: float, power_w: float) -> None:
        """Add a sample; times must not go backwards (equal times are ignored)."""
        with self._lock:
            t, p, cum = self._arrays
            n = len(t)
            if n and time_s <= t[n - 1]:
                return
            step = 0.5 * (p[n - 1] + power_w) * (time_s - t[n - 1]) if n else 0.0
            # Times last: a reader that sees len(t) == n + 1 finds p and cum ready.
            p.append(power_w)
            cum.append(cum[n - 1] + step if n else 0.0)
            t.append(time_s)

    def trim(self, before_s: float, *, min_fraction: float = 0.0) -> int:
        """Drop the samples that no query at or after ``before_s`` needs.

        Keeps the last sample at or before ``before_s`` and every later one,
        so ``energy_between(a, b)``, ``energy_at(a)`` and ``power_at(a)`` are
        unchanged for ``a >= before_s``; before it they become extrapolations
        from the first kept sample. The running integral is not rebased.

        Args:
            before_s: Earliest time later queries will ask about.
            min_fraction: Drop nothing unless at least this fraction of the
                samples can go (0.5 makes repeated trims O(1) amortized per sample).

        Returns:
            How many samples were dropped.
        """
        with self._lock:
            t, p, cum = self._arrays
            n = len(t)
            k = bisect_right(t, before_s, 0, n) - 1  # index of the sample to keep first
            if k <= 0 or k < min_fraction * n:
                return 0
            self._arrays = (t[k:], p[k:], cum[k:])
            return k

    @property
    def first_time_s(self) -> float | None:
        t = self._arrays[0]
        return t[0] if t else None

    @property
    def last_time_s(self) -> float | None:
        t = self._arrays[0]
        return t[-1] if t else None

    @property
    def last_power_w(self) -> float | None:
        p = self._arrays[1]
        return p[-1] if p else None

    def energy_at(self, time_s: float) -> float:
        """Joules from the first sample ever appended up to ``time_s`` (negative before it)."""
        arrays = self._arrays
        return _energy_at(arrays, len(arrays[0]), time_s)

    def energy_between(self, start_s: float, end_s: float) -> float:
        """Joules between two times; 0.0 for an empty timeline or an empty interval."""
        arrays = self._arrays
        t, p, cum = arrays
        n = len(t)
        if end_s <= start_s or n == 0:
            return 0.0
        if start_s <= t[0]:  # often 0.0 .. t: one search instead of two
            return _energy_at(arrays, n, end_s) - (cum[0] + p[0] * (start_s - t[0]))
        return _energy_at(arrays, n, end_s) - _energy_at(arrays, n, start_s)

    def power_at(self, time_s: float) -> float | None:
        """Interpolated watts at a time, ``None`` for an empty timeline."""
        t, p, _ = self._arrays
        n = len(t)
        if n == 0:
            return None
        i = bisect_right(t, time_s, 0, n) - 1
        if i < 0:
            return p[0]
        if i == n - 1:
            return p[i]
        frac = (time_s - t[i]) / (t[i + 1] - t[i])
        return p[i] + frac * (p[i + 1] - p[i])

    def points(self, since_s: float | None = None) -> tuple[list[float], list[float]]:
        """Copies of the sample times and powers.

        Args:
            since_s: Only the samples from the last one at or before this
                time on, so that integrating from ``since_s`` on is exact; the
                copy costs O(log n + samples returned). ``None``: all.
        """
        t, p, _ = self._arrays
        n = len(t)
        i = 0 if since_s is None else max(0, bisect_right(t, since_s, 0, n) - 1)
        return t[i:n].tolist(), p[i:n].tolist()


def _energy_at(arrays: _Arrays, n: int, time_s: float) -> float:
    """``energy_at`` over one snapshot of the arrays, looking only below ``n``."""
    t, p, cum = arrays
    if n == 0:
        return 0.0
    i = bisect_right(t, time_s, 0, n) - 1
    if i < 0:
        return cum[0] + p[0] * (time_s - t[0])
    if i == n - 1:
        return cum[i] + p[i] * (time_s - t[i])
    dt = time_s - t[i]
    slope = (p[i + 1] - p[i]) / (t[i + 1] - t[i])
    return cum[i] + dt * (p[i] + 0.5 * slope * dt)

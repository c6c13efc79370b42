"""A power timeline that answers "how many joules between a and b" in O(log n).

Samples are (time, watts) points. Power between two points is linear (the
trapezoid rule); before the first point and after the last it is held
constant. A running integral is kept as samples arrive, so the energy of any
window is two binary searches and a little arithmetic, however long the run.

A long-lived owner (a server's Meter) bounds memory with :meth:`PowerTimeline.trim`:
it drops old samples but never rebases the running integral, so every query at
or after the trim time gives exactly the answer it gave before.

A window that takes its own readings at its start and end (the Meter does)
asks :meth:`PowerTimeline.between_readings`: its edges come from those
readings, not from samples up to a sampling period away, so a window shorter
than the sampling period is not read as the power before it began.

:class:`UsageTimeline` does the same for devices whose energy is a model of
cumulative counters (the CPU model over CPU-seconds): each piece between two
readings gets the model's energy for the utilization of that piece.
"""

from __future__ import annotations

import operator
import threading
from array import array
from bisect import bisect_right
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    _Arrays = tuple[array[float], array[float], array[float]]  # times, powers, cumulative J

Usage = tuple[float, ...]
"""One reading of a device's cumulative usage counters (e.g. CPU-seconds)."""
PartsJ = tuple[float, ...]
"""Energy of a piece of time by the model: ``(total, *parts)`` in joules."""
UsageModel = Callable[[float, Usage, Usage], PartsJ]
"""``(duration_s, start, end)`` → joules of the piece between two readings."""
PowerAnchors = tuple[float, float, float, float, float, float]
"""(time, watts, running J) of the first sample after a start and the last up to an end."""
UsageAnchors = tuple[float, Usage, PartsJ, float, Usage, PartsJ]
"""(time, usage, running J) of the first reading after a start and the last up to an end."""


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

    def between_readings(
        self,
        start_s: float,
        start_w: float,
        end_s: float,
        end_w: float,
        pinned_j: float | None = None,
    ) -> float:
        """Joules between two readings taken at ``start_s`` and ``end_s``.

        The samples strictly between them are used as usual (trapezoids); the
        edges join each reading to its nearest sample. With no sample between
        them, the window is the trapezoid of its two readings.

        Args:
            pinned_j: :meth:`start_offset` for this start, kept by a caller
                that may have trimmed the samples after the start since.
        """
        return power_between(self.anchors(start_s, end_s), start_s, start_w, end_s, end_w, pinned_j)

    def anchors(self, start_s: float, end_s: float) -> PowerAnchors | None:
        """What :meth:`between_readings` needs of the samples: the first after ``start_s``
        and the last up to ``end_s`` (time, watts, running joules each); ``None`` when no
        sample lies between. Taken once, it answers later exactly as now (see
        :func:`power_between`), whatever is appended or trimmed since."""
        t, p, cum = self._arrays
        n = len(t)
        first = bisect_right(t, start_s, 0, n)
        last = bisect_right(t, end_s, 0, n) - 1
        if first > last:
            return None
        return t[first], p[first], cum[first], t[last], p[last], cum[last]

    def start_offset(self, start_s: float, start_w: float) -> float | None:
        """The running integral a reading at ``start_s`` stands for, once a later sample exists.

        With it a window no longer needs the samples before that later sample
        (see :meth:`between_readings`); ``None`` while there is none.
        """
        t, p, cum = self._arrays
        n = len(t)
        first = bisect_right(t, start_s, 0, n)
        if first >= n:
            return None
        return cum[first] - 0.5 * (start_w + p[first]) * (t[first] - start_s)

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


def power_between(
    anchors: PowerAnchors | None,
    start_s: float,
    start_w: float,
    end_s: float,
    end_w: float,
    pinned_j: float | None = None,
) -> float:
    """:meth:`PowerTimeline.between_readings` from :meth:`PowerTimeline.anchors` taken earlier."""
    if anchors is None:
        return 0.5 * (start_w + end_w) * (end_s - start_s) if end_s > start_s else 0.0
    t_first, p_first, cum_first, t_last, p_last, cum_last = anchors
    if pinned_j is None:
        pinned_j = cum_first - 0.5 * (start_w + p_first) * (t_first - start_s)
    return cum_last + 0.5 * (p_last + end_w) * (end_s - t_last) - pinned_j


class UsageTimeline:
    """Sampler readings of cumulative usage counters, with the model's running energy.

    Each reading is ``(time_s, usage)``. The energy of the piece between two
    consecutive readings is ``model(duration, start, end)``, a tuple of
    ``(total, *parts)`` joules, and a running sum of those is kept. The energy
    between two readings a window takes itself is then the model over its
    edge pieces plus the running sum between: exact for the utilization of
    every piece, and the same answer however many other windows are open.

    Threading as :class:`PowerTimeline`: one writer, lock-free readers.
    """

    __slots__ = ("_lists", "_lock", "_model", "_zero")

    def __init__(self, model: UsageModel, n_parts: int = 1) -> None:
        self._model = model
        self._zero: PartsJ = (0.0,) * n_parts
        # times, usage readings, running energy (per part) at each reading
        self._lists: tuple[array[float], list[Usage], list[PartsJ]] = (array("d"), [], [])
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._lists[0])

    @property
    def last_time_s(self) -> float | None:
        t = self._lists[0]
        return t[-1] if t else None

    @property
    def last_usage(self) -> Usage | None:
        u = self._lists[1]
        return u[-1] if u else None

    def append(self, time_s: float, usage: Usage) -> PartsJ | None:
        """Add a reading; the model's joules since the previous one (None: first, or late)."""
        with self._lock:
            t, u, cum = self._lists
            n = len(t)
            if n and time_s <= t[n - 1]:
                return None
            piece = self._model(time_s - t[n - 1], u[n - 1], usage) if n else None
            u.append(usage)
            cum.append(_add(cum[n - 1], piece) if piece is not None else self._zero)
            t.append(time_s)  # last: a reader that sees it finds the rest ready
            return piece

    def model(self, duration_s: float, start: Usage, end: Usage) -> PartsJ:
        """The model's joules between two readings, nothing in between considered."""
        return self._model(duration_s, start, end) if duration_s > 0 else self._zero

    def between_readings(
        self,
        start_s: float,
        start: Usage,
        end_s: float,
        end: Usage,
        pinned: PartsJ | None = None,
    ) -> PartsJ:
        """Joules ``(total, *parts)`` between two readings a window took itself.

        Args:
            pinned: :meth:`start_offset` for this start (the caller may have
                trimmed the readings after the start since).
        """
        return self.combine(self.anchors(start_s, end_s), start_s, start, end_s, end, pinned)

    def anchors(self, start_s: float, end_s: float) -> UsageAnchors | None:
        """The first reading after ``start_s`` and the last up to ``end_s`` (time, usage,
        running joules each), ``None`` when none lies between: with :meth:`combine`, the
        answer of :meth:`between_readings` at the time they were taken."""
        t, u, cum = self._lists
        n = len(t)
        first = bisect_right(t, start_s, 0, n)
        last = bisect_right(t, end_s, 0, n) - 1
        if first > last:
            return None
        return t[first], u[first], cum[first], t[last], u[last], cum[last]

    def combine(
        self,
        anchors: UsageAnchors | None,
        start_s: float,
        start: Usage,
        end_s: float,
        end: Usage,
        pinned: PartsJ | None = None,
    ) -> PartsJ:
        """:meth:`between_readings` from :meth:`anchors` taken earlier (the model is fixed)."""
        if anchors is None:
            return self.model(end_s - start_s, start, end)
        t_first, u_first, cum_first, t_last, u_last, cum_last = anchors
        if pinned is None:
            pinned = _sub(cum_first, self.model(t_first - start_s, start, u_first))
        tail = self.model(end_s - t_last, u_last, end)
        return tuple(c + x - s for c, x, s in zip(cum_last, tail, pinned, strict=True))

    def start_offset(self, start_s: float, start: Usage) -> PartsJ | None:
        """What :meth:`between_readings` subtracts for this start; None until a later reading."""
        t, u, cum = self._lists
        n = len(t)
        first = bisect_right(t, start_s, 0, n)
        if first >= n:
            return None
        return _sub(cum[first], self.model(t[first] - start_s, start, u[first]))

    def trim(self, before_s: float, *, min_fraction: float = 0.0) -> int:
        """Drop readings no query at or after ``before_s`` needs (as :meth:`PowerTimeline.trim`)."""
        with self._lock:
            t, u, cum = self._lists
            n = len(t)
            k = bisect_right(t, before_s, 0, n) - 1
            if k <= 0 or k < min_fraction * n:
                return 0
            self._lists = (t[k:], u[k:], cum[k:])
            return k


def _add(a: PartsJ, b: PartsJ) -> PartsJ:
    return tuple(map(operator.add, a, b))


def _sub(a: PartsJ, b: PartsJ) -> PartsJ:
    return tuple(map(operator.sub, a, b))

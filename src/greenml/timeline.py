"""A power timeline that answers "how many joules between a and b" in O(log n).

Samples are (time, watts) points. Power between two points is linear (the
trapezoid rule); before the first point and after the last it is held
constant. A running integral is kept as samples arrive, so the energy of any
window is two binary searches and a little arithmetic, however long the run.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right


class PowerTimeline:
    """Append-only (time_s, power_w) samples with their running integral.

    One thread may append while others read: readers take ``len`` once and
    only look below it.
    """

    __slots__ = ("_cum", "_p", "_t")

    def __init__(self) -> None:
        self._t = array("d")
        self._p = array("d")
        self._cum = array("d")  # energy in joules from the first sample to each sample

    def __len__(self) -> int:
        return len(self._t)

    def append(self, time_s: float, power_w: float) -> None:
        """Add a sample; times must not go backwards (equal times are ignored)."""
        n = len(self._t)
        if n and time_s <= self._t[n - 1]:
            return
        step = 0.5 * (self._p[n - 1] + power_w) * (time_s - self._t[n - 1]) if n else 0.0
        # Times last: a reader that sees len(t) == n + 1 finds p and cum ready.
        self._p.append(power_w)
        self._cum.append(self._cum[n - 1] + step if n else 0.0)
        self._t.append(time_s)

    @property
    def last_time_s(self) -> float | None:
        return self._t[-1] if self._t else None

    @property
    def last_power_w(self) -> float | None:
        return self._p[-1] if self._p else None

    def energy_at(self, time_s: float) -> float:
        """Joules integrated from the first sample up to ``time_s`` (negative before it)."""
        t, p, cum = self._t, self._p, self._cum
        n = len(t)
        if n == 0:
            return 0.0
        i = bisect_right(t, time_s, 0, n) - 1
        if i < 0:
            return p[0] * (time_s - t[0])
        if i == n - 1:
            return cum[i] + p[i] * (time_s - t[i])
        dt = time_s - t[i]
        slope = (p[i + 1] - p[i]) / (t[i + 1] - t[i])
        return cum[i] + dt * (p[i] + 0.5 * slope * dt)

    def energy_between(self, start_s: float, end_s: float) -> float:
        """Joules between two times; 0.0 for an empty timeline or an empty interval."""
        if end_s <= start_s or not self._t:
            return 0.0
        if start_s <= self._t[0]:  # often 0.0 .. t: one search instead of two
            return self.energy_at(end_s) - self._p[0] * (start_s - self._t[0])
        return self.energy_at(end_s) - self.energy_at(start_s)

    def power_at(self, time_s: float) -> float | None:
        """Interpolated watts at a time, ``None`` for an empty timeline."""
        t, p = self._t, self._p
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

    def points(self) -> tuple[list[float], list[float]]:
        """Copies of the sample times and powers."""
        return list(self._t), list(self._p)

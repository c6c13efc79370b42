"""Energy counters that wrap around (RAPL's ``energy_uj``, fake counters)."""

from __future__ import annotations


class WrappingCounter:
    """Turns raw readings of a counter that wraps at ``max_raw`` into a running total.

    The counter counts up from 0 to ``max_raw`` and then restarts at 0. A
    reading below the previous one means it wrapped once; callers must read
    it at least once per wrap period (the Meter's sampler does).
    """

    __slots__ = ("_last_raw", "_max_raw", "total")

    def __init__(self, first_raw: float, max_raw: float) -> None:
        self._last_raw = first_raw
        self._max_raw = max_raw
        self.total = 0.0

    @property
    def wrap_at(self) -> float:
        """The first raw value the counter never shows (it reads 0 again)."""
        return self._max_raw + 1

    def update(self, raw: float) -> float:
        """Feed a new raw reading; returns the total counted since the first one."""
        delta = raw - self._last_raw
        if delta < 0:
            delta += self._max_raw + 1
        self._last_raw = raw
        self.total += delta
        return self.total

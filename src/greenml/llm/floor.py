"""The idle floor: what the serving devices draw with the engine up and nothing in flight.

Measured, not assumed: the median power of the most recent intervals with no
request in flight (the median, so the ramp-down right after a burst does not
lift it). A request's energy splits into its share of this floor (*static*:
drawn whether or not it had come) and the rest (*dynamic*: what serving it
added). The dynamic part of identical requests is the same alone or in a
crowd; the static part is not, since a crowd shares the floor — which is the
economy of batching, not an attribution error.

Until ``min_intervals`` idle intervals are seen the floor is unknown and the
whole energy counts as dynamic, said so (``floor_w`` None).
"""

from __future__ import annotations

import statistics
import threading
from collections import deque


class IdleFloor:
    """Median idle power over the last ``keep`` idle intervals.

    Args:
        keep: Idle intervals remembered.
        min_intervals: Idle intervals needed before the floor is used.
    """

    def __init__(self, keep: int = 600, min_intervals: int = 5) -> None:
        self._powers: deque[float] = deque(maxlen=keep)
        self._min = min_intervals
        self._lock = threading.Lock()
        self._floor: float | None = None

    def add(self, duration_s: float, energy_j: float) -> None:
        """An interval with nothing in flight."""
        if duration_s <= 0 or not energy_j >= 0:
            return
        with self._lock:
            self._powers.append(energy_j / duration_s)
            if len(self._powers) >= self._min:
                self._floor = statistics.median(self._powers)

    @property
    def floor_w(self) -> float | None:
        """The idle floor in watts, or None while not yet measured."""
        return self._floor

    def static_j(self, duration_s: float, energy_j: float) -> float:
        """The floor's part of an interval's energy (never more than the interval drew)."""
        floor = self._floor
        if floor is None or duration_s <= 0:
            return 0.0
        return max(0.0, min(energy_j, floor * duration_s))

"""Thermally steady state before measuring: wait until the power settles.

A GPU that has just started, or whose power limit just changed, heats up and
its power drifts for seconds to minutes (leakage grows with temperature, fans
and clocks follow), so a profile taken at once favours whatever ran first.
Zeus measures after a warm-up for that reason. greenml's criterion, stated in
every profile it gates:

    **steady** when the power readings of the last ``window_s`` seconds (at
    least ``min_readings`` of them, and at least ``window_s`` after the wait
    began) span at most ``tolerance_rel`` of their mean (max − min); after
    ``max_wait_s`` the measurement starts anyway and is labelled *not settled*.

Defaults: a spread of at most 3 % over 5 s, at most 60 s of waiting.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from greenml.errors import ConfigError

TOLERANCE_REL = 0.03
WINDOW_S = 5.0
MAX_WAIT_S = 60.0
MIN_READINGS = 3


@dataclass
class SteadyState:
    """Judges, reading by reading, whether power has settled (see the module docstring)."""

    tolerance_rel: float = TOLERANCE_REL
    window_s: float = WINDOW_S
    max_wait_s: float = MAX_WAIT_S
    min_readings: int = MIN_READINGS
    _readings: deque[tuple[float, float]] = field(default_factory=deque, repr=False)
    _start: float | None = None
    outcome: str = ""

    def __post_init__(self) -> None:
        if not (0 < self.tolerance_rel < 1 and self.window_s > 0 and self.max_wait_s >= 0
                and self.min_readings >= 2):  # fmt: skip
            raise ConfigError(
                "steady-state criterion: tolerance in (0, 1), window > 0 s, wait >= 0 s, "
                f"at least 2 readings; got {self.tolerance_rel}, {self.window_s}, "
                f"{self.max_wait_s}, {self.min_readings}"
            )

    @property
    def criterion(self) -> str:
        return (f"power spread (max − min) ≤ {self.tolerance_rel * 100:g} % of its mean over "
                f"{self.window_s:g} s (≥ {self.min_readings} readings), at most "
                f"{self.max_wait_s:g} s of waiting")  # fmt: skip

    def reset(self) -> None:
        """Start waiting again (a new limit, a new configuration)."""
        self._readings.clear()
        self._start = None
        self.outcome = ""

    def add(self, t_s: float, power_w: float) -> bool:
        """Record one reading; True once steady (or once waiting has timed out)."""
        if self._start is None:
            self._start = t_s
        if math.isfinite(power_w) and power_w > 0:
            self._readings.append((t_s, power_w))
        while self._readings and self._readings[0][0] < t_s - self.window_s:
            self._readings.popleft()
        if self._steady(t_s):
            self.outcome = f"settled after {t_s - self._start:.1f} s"
            return True
        if t_s - self._start >= self.max_wait_s:
            self.outcome = (
                f"not settled after {self.max_wait_s:g} s: measured anyway"
                if self._readings else "no power reading: settling not judged"
            )  # fmt: skip
            return True
        return False

    def _steady(self, now: float) -> bool:
        if len(self._readings) < self.min_readings:
            return False
        if self._start is None or now - self._start < self.window_s:
            return False
        values = [p for _, p in self._readings]
        mean = sum(values) / len(values)
        return max(values) - min(values) <= self.tolerance_rel * mean


def run_until_steady(
    step: Callable[[], Any], meter: Any, steady: SteadyState | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> str:  # fmt: skip
    """Run ``step`` until ``meter``'s power settles (or the wait times out); the outcome.

    ``meter`` needs ``sample_now()`` and ``current_power_w()`` (a :class:`Meter`).
    """
    criterion = steady or SteadyState()
    criterion.reset()
    meter.sample_now()
    while not criterion.add(clock(), meter.current_power_w()):
        step()
        meter.sample_now()
    return f"{criterion.outcome} ({criterion.criterion})"

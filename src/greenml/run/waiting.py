"""Waiting for a planned start: sleep with a countdown on a terminal.

:func:`wait_until` sleeps until a planned start, calling back about once a
second; :class:`Countdown` redraws one line on stderr. Pausing a running job
between chunks is :mod:`greenml.run.pausing`.

Clocks and sleeps are injected: time here is wall-clock Unix seconds, the
time plans are made in.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from greenml.quantities.durations import clock_text, utc_text

Clock = Callable[[], float]
Sleep = Callable[[float], None]

__all__ = ["Countdown", "clock_text", "utc_text", "wait_until"]


def wait_until(
    start_s: float,
    *,
    clock: Clock = time.time,
    sleep: Sleep = time.sleep,
    on_tick: Callable[[float], None] | None = None,
    tick_s: float = 1.0,
) -> float:
    """Sleep until ``start_s``; ``on_tick(remaining_s)`` about every ``tick_s``.

    Returns:
        The seconds waited (0 when the start has passed).
    """
    first = clock()
    while True:
        remaining = start_s - clock()
        if remaining <= 0:
            return max(0.0, clock() - first)
        if on_tick is not None:
            on_tick(remaining)
        sleep(min(tick_s, remaining))


class Countdown:
    """``greenml ▸ starting in 1:02:03 at 03:00 UTC · …`` redrawn in place on a terminal."""

    def __init__(self, start_s: float, detail: str = "", stream: TextIO | None = None) -> None:
        self.start_s = start_s
        self.detail = detail
        self.stream = stream or sys.stderr

    def update(self, remaining_s: float) -> None:
        line = f"greenml ▸ starting in {clock_text(remaining_s)} at {utc_text(self.start_s)}"
        if self.detail:
            line += f" · {self.detail}"
        self.stream.write(f"\r\x1b[2K{line}")
        self.stream.flush()

    def clear(self) -> None:
        self.stream.write("\r\x1b[2K")
        self.stream.flush()

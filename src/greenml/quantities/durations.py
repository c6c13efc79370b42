"""Durations and moments as text: ``42 s``, ``3.5 h``, ``1:02:03``, ``2024-05-01 03:00 UTC``."""

from __future__ import annotations

from datetime import datetime, timezone

from greenml.quantities.units import scaled

DURATION_UNITS = ((1e-6, "µs"), (1e-3, "ms"), (1.0, "s"), (60.0, "min"), (3600.0, "h"))
"""Seconds as people read them, smallest first (hours are the largest unit)."""


def duration(seconds: float, digits: int | None = None) -> str:
    """A span in the unit that fits: ``120 ms``, ``42 s``, ``12 min``, ``3.5 h``."""
    return scaled(seconds, DURATION_UNITS, digits=digits)


def hours(seconds: float, digits: int | None = None) -> str:
    """Seconds as hours whatever their size: ``3.5 h``."""
    return scaled(seconds / 3600.0, ((1.0, "h"),), digits=digits)


def clock_text(seconds: float) -> str:
    """``1:02:03`` (hours unbounded), or ``0:00:05``."""
    total = max(0, round(seconds))
    minutes, secs = divmod(total, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def elapsed(seconds: float) -> str:
    """A live clock: ``12.3 s`` for the first minute, then ``1:02:03``."""
    return f"{seconds:.1f} s" if seconds < 60 else clock_text(seconds)


def utc_text(time_s: float) -> str:
    """``2024-05-01 03:00 UTC`` (with seconds when they are not zero)."""
    moment = datetime.fromtimestamp(time_s, tz=timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC" if moment.second else "%Y-%m-%d %H:%M UTC")

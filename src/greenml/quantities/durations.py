"""Durations and moments as text: ``1:02:03`` and ``2024-05-01 03:00 UTC``."""

from __future__ import annotations

from datetime import datetime, timezone


def clock_text(seconds: float) -> str:
    """``1:02:03`` (hours unbounded), or ``0:00:05``."""
    total = max(0, round(seconds))
    minutes, secs = divmod(total, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def utc_text(time_s: float) -> str:
    """``2024-05-01 03:00 UTC`` (with seconds when they are not zero)."""
    moment = datetime.fromtimestamp(time_s, tz=timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC" if moment.second else "%Y-%m-%d %H:%M UTC")

"""Durations (``90m``, ``4h``, ``1d2h``) and instants (ISO-8601 with an offset, or ``+6h``)."""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta, timezone

from greenml.errors import ConfigError

_UNITS_S = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(min|s|m|h|d|w)", re.IGNORECASE)


def parse_duration_s(text: str, what: str = "duration", *, allow_zero: bool = False) -> float:
    """``30`` (seconds), ``90m``, ``1.5h``, ``2h30m``, ``1d`` → seconds.

    Raises:
        ConfigError: Not a duration, or not positive (zero allowed with ``allow_zero``).
    """
    raw = text.strip().lower().replace(" ", "")
    body = raw.lstrip("+-")
    try:
        seconds = float(body)
    except ValueError:
        parts = _PART.findall(body)
        if not parts or "".join(n + u for n, u in parts) != body:
            example = "90m, 4h, 1d12h or 3600"
            raise ConfigError(f"{what} {text!r} is not a duration like {example}") from None
        seconds = sum(float(n) * _UNITS_S[u] for n, u in parts)
    if raw.startswith("-") and seconds != 0:
        seconds = -seconds
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not allow_zero):
        raise ConfigError(f"{what} must be a positive duration, not {text!r}")
    return seconds


def parse_instant(text: str, what: str = "time", now: datetime | None = None) -> datetime:
    """ISO-8601 with ``Z`` or an offset, ``now``, or ``+DURATION`` from ``now`` → aware UTC.

    Raises:
        ConfigError: Unparseable, or without a time zone (never guessed).
    """
    raw = text.strip()
    base = now or datetime.now(timezone.utc)
    if raw.lower() == "now":
        return base
    if raw.startswith("+"):
        return base + timedelta(seconds=parse_duration_s(raw[1:], what))
    iso = raw[:-1] + "+00:00" if raw[-1:] in ("Z", "z") else raw
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        raise ConfigError(
            f"{what} {text!r} is not an ISO-8601 time (e.g. 2026-11-23T08:00Z) or +DURATION"
        ) from None
    if moment.tzinfo is None:
        raise ConfigError(f"{what} {text!r} has no time zone: add Z (UTC) or an offset like +01:00")
    return moment.astimezone(timezone.utc)

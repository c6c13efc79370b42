"""Axis ticks for the SVG charts: round numbers on value axes, round UTC times on time axes."""

from __future__ import annotations

import math
from datetime import datetime, timezone

_NUMBER_STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)
_MINUTE, _HOUR, _DAY = 60.0, 3600.0, 86_400.0
_TIME_STEPS = (
    1.0, 2.0, 5.0, 10.0, 15.0, 30.0,
    _MINUTE, 2 * _MINUTE, 5 * _MINUTE, 10 * _MINUTE, 15 * _MINUTE, 30 * _MINUTE,
    _HOUR, 2 * _HOUR, 3 * _HOUR, 6 * _HOUR, 12 * _HOUR,
    _DAY, 2 * _DAY, 7 * _DAY, 14 * _DAY,
)  # fmt: skip
_MONTH_STEPS = (1, 2, 3, 6, 12, 24, 60, 120)


def value_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round ticks covering [low, high] (the ends are rounded outwards)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return [0.0, 1.0]
    if high <= low:
        pad = abs(high) * 0.1 or 1.0
        low, high = low - pad, high + pad
    raw = (high - low) / max(count, 1)
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in _NUMBER_STEPS if m * magnitude >= raw * 0.75)
    first = math.floor(low / step + 1e-9) * step
    last = math.ceil(high / step - 1e-9) * step
    n = round((last - first) / step)
    return [_clean(first + i * step, step) for i in range(n + 1)]


def format_value(value: float, step: float = 0.0) -> str:
    """A number for a tick or a label: decimals from ``step`` (or 3 significant digits)."""
    if not math.isfinite(value):
        return "n/a"
    size = max(abs(value), abs(step))
    if size >= 1e7 or (0 < size < 1e-4):
        return f"{value:.3g}"
    if step > 0:
        decimals = max(0, -math.floor(math.log10(step) + 1e-9))
        if step * 10**decimals % 1 > 1e-6:  # 2.5, 0.25 …
            decimals += 1
    else:
        decimals = max(0, 2 - math.floor(math.log10(size))) if size else 0
    return f"{value:,.{min(decimals, 6)}f}"


def format_error(error: float) -> str:
    """A ± half-width to two significant digits (``0.40``, ``0.050``, ``12``)."""
    if not math.isfinite(error) or error <= 0:
        return format_value(error)
    decimals = max(0, 1 - math.floor(math.log10(error)))
    return f"{error:,.{min(decimals, 8)}f}"


def time_ticks(start_s: float, end_s: float, count: int = 6) -> tuple[list[float], list[str]]:
    """Round UTC times within [start_s, end_s], with their labels.

    Labels show the date on the first tick and wherever the day changes, and
    the time of day when ticks are less than a day apart.
    """
    span = max(end_s - start_s, 1.0)
    raw = span / max(count, 1)
    if raw > 20 * _DAY:
        return _month_ticks(start_s, end_s, raw)
    step = next((s for s in _TIME_STEPS if s >= raw), _TIME_STEPS[-1])
    offset = 4 * _DAY if step >= 7 * _DAY else 0.0  # weeks start on a Monday (1970-01-05)
    first = math.ceil((start_s - offset) / step) * step + offset
    ticks = [first + i * step for i in range(int((end_s - first) // step) + 1)]
    labels, last_day = [], ""
    for t in ticks:
        moment = _utc(t)
        day = moment.strftime("%Y-%m-%d")
        if step >= _DAY:
            labels.append(day)
            continue
        clock = moment.strftime("%H:%M:%S" if step < _MINUTE else "%H:%M")
        labels.append(f"{clock}\n{day}" if day != last_day else clock)
        last_day = day
    return ticks, labels


def time_span_text(start_s: float, end_s: float) -> str:
    """``2024-05-01 10:00 to 2024-05-01 14:00 UTC``, for descriptions."""
    fmt = "%Y-%m-%d %H:%M"
    return f"{_utc(start_s).strftime(fmt)} to {_utc(end_s).strftime(fmt)} UTC"


def _month_ticks(start_s: float, end_s: float, raw: float) -> tuple[list[float], list[str]]:
    months = next((m for m in _MONTH_STEPS if m * 30 * _DAY >= raw), _MONTH_STEPS[-1])
    begin = _utc(start_s)
    index = begin.year * 12 + begin.month - 1
    if begin != datetime(begin.year, begin.month, 1, tzinfo=timezone.utc):
        index += 1
    index = math.ceil(index / months) * months
    ticks: list[float] = []
    labels: list[str] = []
    while True:
        moment = datetime(index // 12, index % 12 + 1, 1, tzinfo=timezone.utc)
        if moment.timestamp() > end_s:
            return ticks, labels
        ticks.append(moment.timestamp())
        labels.append(moment.strftime("%Y" if months >= 12 else "%Y-%m"))
        index += months


def _utc(time_s: float) -> datetime:
    return datetime.fromtimestamp(time_s, tz=timezone.utc)


def _clean(value: float, step: float) -> float:
    """Remove float noise (0.30000000000000004 → 0.3)."""
    return round(value, max(0, 6 - math.floor(math.log10(step))))

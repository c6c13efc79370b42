"""Points from an API into a step series that covers a span, or an error naming the gap."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone

from greenml.accounting.series import StepSeries
from greenml.errors import ConfigError

_TOLERANCE_S = 1e-6


@dataclass(frozen=True)
class Point:
    """One value that holds from ``start_s`` to ``end_s`` (Unix seconds).

    Attributes:
        start_s: Start of the period.
        end_s: End of the period.
        g_per_kwh: Intensity in gCO2eq/kWh.
        flag: What the provider says about it (``estimated``, ``actual``,
            ``forecast``), or ``""``.
    """

    start_s: float
    end_s: float
    g_per_kwh: float
    flag: str = ""


def parse_time(text: object) -> float:
    """An ISO 8601 time from an API (``Z`` or an offset; none means UTC) as Unix seconds."""
    if not isinstance(text, str):
        raise ValueError(f"expected a time string, got {text!r}")
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    when = datetime.fromisoformat(value)
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()


def iso(time_s: float, seconds: bool = True) -> str:
    """UTC time as the APIs expect it: ``2024-03-14T09:00:00Z`` (or without seconds)."""
    fmt = "%Y-%m-%dT%H:%M:%SZ" if seconds else "%Y-%m-%dT%H:%MZ"
    return datetime.fromtimestamp(time_s, tz=timezone.utc).strftime(fmt)


def human(time_s: float) -> str:
    """UTC time for messages: ``2024-03-14 09:00 UTC``."""
    return datetime.fromtimestamp(time_s, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def floor_to(time_s: float, step_s: float) -> float:
    """The start of the ``step_s``-long period (aligned on the epoch) holding ``time_s``."""
    return math.floor(time_s / step_s) * step_s


def chunks(start_s: float, end_s: float, size_s: float) -> list[tuple[float, float]]:
    """Split [start_s, end_s] into pieces no longer than ``size_s`` (at least one)."""
    pieces = []
    at = start_s
    while True:
        stop = min(at + size_s, end_s)
        pieces.append((at, stop))
        if stop >= end_s:
            return pieces
        at = stop


def covering(points: Iterable[Point], start_s: float, end_s: float, what: str) -> list[Point]:
    """The points needed for [start_s, end_s], sorted, checked for holes.

    Duplicated start times keep the last point given (a newer answer wins).

    Args:
        points: Periods as the provider returned them, in any order.
        start_s: Start of the span asked for.
        end_s: End of the span asked for.
        what: Names the data in messages, e.g. ``"Electricity Maps has no
            carbon-intensity data for DE"``.

    Raises:
        ConfigError: Part of the span has no point; the message names the
            first missing part and the span asked for.
    """
    by_start = {p.start_s: p for p in points}
    needed = [
        p
        for _, p in sorted(by_start.items())
        if p.end_s > start_s and (p.start_s < end_s or p.start_s <= start_s)
    ]
    gaps: list[tuple[float, float]] = []
    cursor = start_s
    for point in needed:
        if point.start_s > cursor + _TOLERANCE_S:
            gaps.append((cursor, point.start_s))
        cursor = max(cursor, point.end_s)
    if cursor < end_s - _TOLERANCE_S or not needed:
        gaps.append((cursor, max(end_s, cursor)))
    if gaps:
        first_start, first_end = gaps[0]
        more = f" and {len(gaps) - 1} more gap(s)" if len(gaps) > 1 else ""
        raise ConfigError(
            f"{what} from {human(first_start)} to {human(first_end)}{more} "
            f"(asked for {human(start_s)} to {human(end_s)})"
        )
    return needed


def to_series(points: list[Point]) -> StepSeries:
    """A g/kWh step series from contiguous points (as :func:`covering` returns)."""
    last = points[-1]
    return StepSeries.from_points(
        [p.start_s for p in points],
        [p.g_per_kwh for p in points],
        "g/kWh",
        last_step_s=last.end_s - last.start_s,
    )


def count_flag(points: Iterable[Point], flag: str) -> int:
    """How many points carry a flag."""
    return sum(1 for p in points if p.flag == flag)

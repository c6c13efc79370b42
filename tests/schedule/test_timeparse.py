"""Durations and instants as users type them."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from greenml.errors import ConfigError
from greenml.schedule.timeparse import parse_duration_s, parse_instant

NOW = datetime(2026, 11, 22, 6, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30", 30), ("90m", 5400), ("1.5h", 5400), ("2h30m", 9000), ("1d", 86400), ("45 min", 2700)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration_s(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "4hours", "-3h", "0", "1h-2m", "nan"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_duration_s(text, "--duration")


def test_instants() -> None:
    assert parse_instant("2026-11-23T08:00Z") == datetime(2026, 11, 23, 8, tzinfo=timezone.utc)
    assert parse_instant("2026-11-23T09:00+01:00") == datetime(2026, 11, 23, 8, tzinfo=timezone.utc)
    assert parse_instant("+6h", now=NOW) == datetime(2026, 11, 22, 12, tzinfo=timezone.utc)
    assert parse_instant("now", now=NOW) == NOW
    with pytest.raises(ConfigError, match="no time zone"):
        parse_instant("2026-11-23T08:00")
    with pytest.raises(ConfigError, match="not an ISO-8601 time"):
        parse_instant("tomorrow")

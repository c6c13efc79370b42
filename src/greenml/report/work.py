"""Units of work: what a run did, so that energy can be given per sample, token or query.

A run says how much work it did with a tag (``greenml run --tag samples=50000``):

- a unit tag: ``samples``, ``tokens``, ``queries``, ``requests``, ``images`` or
  ``steps`` (:data:`UNIT_TAGS`), whose value is the amount;
- or the generic pair ``work=N`` with ``work_unit=UNIT`` (``work_unit`` defaults
  to ``units`` when left out).

Amounts are positive numbers (``50000``, ``1.2e9``, ``50_000``). A run with
several work tags needs the unit to be named (``unit=``); runs whose units
differ cannot be compared, and saying so is a :class:`ConfigError` naming them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from greenml.errors import ConfigError

UNIT_TAGS: tuple[str, ...] = ("samples", "tokens", "queries", "requests", "images", "steps")
"""Tag keys whose value is an amount of work in that unit."""

GENERIC_TAG = "work"
GENERIC_UNIT_TAG = "work_unit"
GENERIC_DEFAULT_UNIT = "units"

_SINGULAR = {
    "sample": "samples",
    "token": "tokens",
    "query": "queries",
    "request": "requests",
    "image": "images",
    "step": "steps",
    "unit": "units",
}

DISPLAY_PER: dict[str, float] = {"tokens": 1e6}
"""How many units a figure is shown per (default 1,000; tokens per million)."""
DEFAULT_DISPLAY_PER = 1000.0


@dataclass(frozen=True)
class Work:
    """An amount of work.

    Attributes:
        amount: How many units (positive).
        unit: The unit, plural and lower case (``samples``, ``tokens`` ...).
        source: Where the amount comes from (``tag samples=50000``, ``option``).
    """

    amount: float
    unit: str
    source: str = ""


def normalize_unit(unit: str) -> str:
    """``Query`` → ``queries``: lower case, singular forms of the known units made plural."""
    clean = unit.strip().lower()
    if not clean:
        raise ConfigError("a unit of work cannot be empty")
    return _SINGULAR.get(clean, clean)


def parse_amount(text: str, what: str) -> float:
    """A positive, finite amount from a tag value (``50000``, ``1.2e9``, ``50_000``, ``50,000``).

    Raises:
        ConfigError: Not a positive finite number (the message names ``what``).
    """
    try:
        value = float(str(text).strip().replace("_", "").replace(",", ""))
    except ValueError:
        raise ConfigError(f"{what}: {text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{what}: the amount of work must be a positive number, not {text!r}")
    return value


def _run_name(record: Mapping[str, Any]) -> str:
    return str(record.get("id") or record.get("name") or "?")


def work_tags(record: Mapping[str, Any]) -> dict[str, Work]:
    """Every amount of work the run's tags state, keyed by unit."""
    tags = record.get("tags") or {}
    run = _run_name(record)
    found: dict[str, Work] = {}
    for key in UNIT_TAGS:
        if key in tags:
            amount = parse_amount(tags[key], f"run {run}, tag {key}")
            found[key] = Work(amount, key, f"tag {key}={tags[key]}")
    if GENERIC_TAG in tags:
        unit = normalize_unit(str(tags.get(GENERIC_UNIT_TAG) or GENERIC_DEFAULT_UNIT))
        amount = parse_amount(tags[GENERIC_TAG], f"run {run}, tag {GENERIC_TAG}")
        if unit in found and found[unit].amount != amount:
            raise ConfigError(
                f"run {run}: tags {unit}={tags[unit]} and work={tags[GENERIC_TAG]} disagree"
            )
        found.setdefault(unit, Work(amount, unit, f"tag work={tags[GENERIC_TAG]} ({unit})"))
    return found


def work_of(record: Mapping[str, Any], unit: str | None = None) -> Work | None:
    """The work a run did, from its tags; ``None`` when it states none.

    Args:
        record: A run record (``tags`` is read).
        unit: Pick this unit when the run states several; ``None`` accepts only one.

    Raises:
        ConfigError: A tag is not a positive number, or several units are stated
            and ``unit`` does not say which one.
    """
    found = work_tags(record)
    if unit is not None:
        return found.get(normalize_unit(unit))
    if len(found) > 1:
        raise ConfigError(
            f"run {_run_name(record)} states work in several units ({', '.join(sorted(found))}): "
            "say which one to use (--unit)"
        )
    return next(iter(found.values()), None)


def common_unit(
    groups: Mapping[str, Sequence[Mapping[str, Any]]], unit: str | None = None
) -> str | None:
    """The one unit of work of all runs of all groups, or ``None`` when no run states one.

    Args:
        groups: Runs by group label (``baseline``, ``candidate`` ...).
        unit: The unit to use when runs state several.

    Raises:
        ConfigError: Runs state different units, only some runs state work
            (the message names the runs on each side), or ``unit`` was asked for
            and no run states it.
    """
    by_unit: dict[str, list[str]] = {}
    for label, records in groups.items():
        for record in records:
            work = work_of(record, unit)
            key = work.unit if work is not None else ""
            by_unit.setdefault(key, []).append(f"{label} {_run_name(record)}")
    if len(by_unit) <= 1:
        found = next(iter(by_unit), "")
        if unit is not None and not found:  # asked for a unit no run states: never per run
            raise ConfigError(
                f"no run states work in {unit!r}: tag the runs (--tag {unit}=N), or leave out "
                "the unit to compare per run"
            )
        return found or None
    parts = [
        f"{key or 'no unit of work'}: {', '.join(runs)}" for key, runs in sorted(by_unit.items())
    ]
    raise ConfigError(
        "runs with different units of work cannot be compared ("
        + "; ".join(parts)
        + "): tag every run with the same unit (e.g. --tag samples=N)"
    )


def amounts(records: Iterable[Mapping[str, Any]], unit: str) -> list[float]:
    """The amount of work of each run in ``unit`` (all runs must state it).

    Raises:
        ConfigError: A run states no work in ``unit``.
    """
    out = []
    for record in records:
        work = work_of(record, unit)
        if work is None:
            raise ConfigError(f"run {_run_name(record)} states no work in {unit}")
        out.append(work.amount)
    return out


def display_per(unit: str | None) -> float:
    """How many units a per-unit figure is shown for (1,000, or 1,000,000 tokens); 1 per run."""
    if unit is None:
        return 1.0
    return DISPLAY_PER.get(unit, DEFAULT_DISPLAY_PER)


def per_label(unit: str | None) -> str:
    """``per 1000 samples``, ``per 1M tokens``, or ``per run``."""
    if unit is None:
        return "per run"
    per = display_per(unit)
    text = "1M" if per == 1e6 else f"{per:g}"
    return f"per {text} {unit}"

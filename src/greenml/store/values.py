"""What the store can hold, checked before a write: texts within their column, numbers sane.

Every length comes from the schema itself (:func:`limits`, read from the
``String(n)`` columns), so SQLite, which does not enforce lengths, and
PostgreSQL, which does, refuse the same values, and refuse them before the
database does: a run is refused with one line naming the value, never stored
on one backend and quarantined on the other. No text holds a NUL character
(PostgreSQL cannot store one).

Numbers of an uploaded run (:func:`check_numbers`) are finite and below
:data:`MAX_ABS`; energies are not negative; times fall in :data:`YEARS`. One
NaN or ``1e308`` stored would make every sum over the project NaN or infinite.

Importing this module does not import SQLAlchemy (``greenml run`` checks its
``--name`` and ``--tag`` here before the command starts): :func:`limits` reads
the schema when first called, and :data:`RUN_TEXT_CHARS` is the schema's
length of a run name and a tag key (a test keeps the two in step).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from functools import cache
from typing import Any

from greenml.errors import RecordValueError

RUN_TEXT_CHARS = 255
"""The most characters of a run name, a tag key, a window name (``String(255)`` columns)."""


@cache
def limits() -> dict[tuple[str, str], int]:
    """(table, column) → the most characters the column holds (``String(n)``), from the schema."""
    from greenml.store.schema import metadata

    return {
        (table.name, column.name): int(getattr(column.type, "length", 0))
        for table in metadata.tables.values()
        for column in table.columns
        if getattr(column.type, "length", None)
    }

MAX_ABS = 1e30
"""No figure greenml records comes near it (FLOPs of the largest trainings: ~1e25); a sum of
a million such figures stays finite."""
MAX_ENERGY_J = 1e18
"""A run's energy, at most: 32 GW for a year."""
YEARS = (1990, 2100)
"""Times of runs, windows and samples fall in these years (the end excluded)."""
_TIME_RANGE = (
    datetime(YEARS[0], 1, 1, tzinfo=timezone.utc).timestamp(),
    datetime(YEARS[1], 1, 1, tzinfo=timezone.utc).timestamp(),
)


def check_text(value: str, what: str, table: str, column: str) -> str:
    """``value`` when ``table.column`` can hold it.

    Raises:
        RecordValueError: Longer than the column, or holding a NUL character.
    """
    limit = limits()[(table, column)]
    return check_chars(value, what, limit)


def check_chars(value: str, what: str, limit: int) -> str:
    """``value`` when it has at most ``limit`` characters and no NUL.

    Raises:
        RecordValueError: It does not.
    """
    if len(value) > limit:
        raise RecordValueError(
            f"{what} is {len(value)} characters long; the store keeps at most {limit}: "
            f"{value[:40]!r}…"
        )
    if "\x00" in value:
        raise RecordValueError(f"{what} holds a NUL character, which the store cannot keep")
    return value


def check_run_texts(
    name: str | None, tags: Mapping[str, str], hostname: str | None = None
) -> None:
    """The texts of a new run: its name, tag keys and values, host name (no SQLAlchemy).

    Raises:
        RecordValueError: One is too long or holds a NUL.
    """
    if name is not None:
        check_chars(name, "the run name", RUN_TEXT_CHARS)
    if hostname is not None:
        check_chars(hostname, "the host name", RUN_TEXT_CHARS)
    for key, value in tags.items():
        check_chars(str(key), "a tag key", RUN_TEXT_CHARS)
        if "\x00" in str(value):
            raise RecordValueError(f"the value of tag {str(key)[:40]!r} holds a NUL character")


def check_window_names(names: Iterable[str]) -> None:
    """Window names (``windows.name``)."""
    for name in names:
        check_chars(name, "a window name", RUN_TEXT_CHARS)


def check_devices(pairs: Iterable[tuple[str, str]]) -> None:
    """(device, component) of samples (``samples``/``sample_blocks`` columns)."""
    for device, component in pairs:
        check_text(device, "a device name", "sample_blocks", "device")
        check_text(component, f"the component of {device[:40]!r}", "sample_blocks", "component")


def check_time(value: float, what: str) -> float:
    """Unix seconds within :data:`YEARS`.

    Raises:
        RecordValueError: Not finite, or outside those years.
    """
    if not math.isfinite(value) or not _TIME_RANGE[0] <= value < _TIME_RANGE[1]:
        raise RecordValueError(f"{what} is not a time between {YEARS[0]} and {YEARS[1]}: {value!r}")
    return value


def check_numbers(document: Any, where: str = "the upload") -> None:
    """Every number of a JSON document finite and at most :data:`MAX_ABS` (walked iteratively).

    Raises:
        RecordValueError: The first number that is not, named by its path.
    """
    stack: list[tuple[str, Any]] = [(where, document)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, bool) or value is None or isinstance(value, str):
            continue
        if isinstance(value, int | float):
            if not math.isfinite(value) or abs(value) > MAX_ABS:
                raise RecordValueError(f"{path} is {value!r}: not a finite number of sane size")
        elif isinstance(value, dict):
            stack.extend((f"{path}.{k}", v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(value))


def check_energy(block: Any, what: str) -> None:
    """An energy block (``total_j``, components, devices): no joules negative or beyond
    :data:`MAX_ENERGY_J`, no negative uncertainty.

    Raises:
        RecordValueError: The first such figure.
    """
    if not isinstance(block, dict):
        return
    for key in ("total_j", "energy_j"):
        _joules(block.get(key), f"{what}.{key}")
    rel = block.get("uncertainty_rel")
    if isinstance(rel, int | float) and not isinstance(rel, bool) and rel < 0:
        raise RecordValueError(f"{what}.uncertainty_rel is negative: {rel!r}")
    for key in ("components", "devices"):
        parts = block.get(key)
        if isinstance(parts, dict):
            for name, part in parts.items():
                check_energy(part, f"{what}.{key}.{name}")


def _joules(value: Any, what: str) -> None:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number and not 0 <= value <= MAX_ENERGY_J:
        raise RecordValueError(
            f"{what} is {value!r} J: energy must be between 0 and {MAX_ENERGY_J:g} J"
        )

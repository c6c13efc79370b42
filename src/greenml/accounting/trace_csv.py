"""Reading intensity trace CSV files, fast, with line numbers on errors.

A year of hourly rows is parsed by numpy's C reader (``np.loadtxt``) and
numpy's ISO 8601 parser. When that fails or the data looks wrong (a bad
number, a time with an offset, times out of order), the file is read again
row by row with :mod:`csv` and :mod:`datetime`: that path accepts offsets
and names the file and line of the first bad row.

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import csv
import math
import re
import warnings
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from greenml.accounting.intensity import MAX_G_PER_KWH
from greenml.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

Column = Literal["direct", "lifecycle"]
ISO_DATE = re.compile(r"\s*\d{4}-\d{2}-\d{2}")
"""A time must start with a full date: ``1`` or ``2023`` alone is not a time."""


@dataclass(frozen=True)
class TraceTable:
    """The rows of a trace file.

    Attributes:
        times_s: Unix times, strictly increasing (float64 array).
        values: Intensity in g/kWh (float64 array).
        export: True for an Electricity Maps export, False for a plain file.
        zone: The export's zone id (``None`` for a plain file).
    """

    times_s: np.ndarray[Any, Any]
    values: np.ndarray[Any, Any]
    export: bool
    zone: str | None


def read_trace_csv(path: Path, column: Column) -> TraceTable:
    """Read an Electricity Maps export or a plain ``time,g_per_kwh`` file.

    Raises:
        ConfigError: Unreadable file, no such column, or a malformed row
            (the message gives ``file:line``).
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read trace {path}: {e}") from e
    lines = text.rstrip().splitlines()
    if not lines:
        raise ConfigError(f"{path}: empty trace file")
    head = next(csv.reader(lines[:1]))
    names = [h.strip().lower() for h in head]
    if names and names[0].startswith("datetime"):
        value_at = _export_column(path, names, column)
        width, first, export = len(names), 1, True
    else:
        value_at, width, export = 1, 2, False
        first = 0 if head and _is_number(head[-1]) else 1
    table = _fast(lines, first, width, value_at)
    if table is None:
        table = _slow(path, lines, first, width, value_at)
    if len(table[0]) == 0:
        raise ConfigError(f"{path}: no data rows")
    zone = None
    if export and "zone id" in names:
        row = next(csv.reader(lines[1:2]), [])
        zone = row[names.index("zone id")].strip() if len(row) == width else None
    return TraceTable(table[0], table[1], export, zone or None)


def _export_column(path: Path, names: list[str], column: Column) -> int:
    """Index of the direct or life-cycle intensity in an Electricity Maps header."""
    marks = ("direct",) if column == "direct" else ("lca", "life cycle", "lifecycle")
    for i, name in enumerate(names):
        if "carbon intensity" in name and any(m in name for m in marks):
            return i
    raise ConfigError(f"{path}:1: no {column} carbon intensity column in the header")


def _fast(lines: list[str], first: int, width: int, value_at: int) -> tuple[Any, Any] | None:
    """numpy parse of well-formed, naive-UTC rows; None if anything looks off."""
    import numpy as np

    body = lines[first:]
    text = "\n".join(body)
    if '"' not in text and text.count(",") != len(body) * (width - 1):
        return None  # a row with the wrong number of columns, or a blank line
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # numpy warns on (and drops) UTC offsets
            table = np.loadtxt(
                body, delimiter=",", usecols=(0, value_at), quotechar='"', comments=None,
                dtype=[("t", "U40"), ("v", "f8")], ndmin=1,
            )  # fmt: skip
            stamps = table["t"].astype("datetime64[us]")
    except (ValueError, Warning):
        return None
    dated = np.char.find(np.char.strip(table["t"]), "-") == 4  # 2023-…, not "1" or "2023"
    if np.isnat(stamps).any() or not dated.all():
        return None  # the slow path names the row
    times = stamps.astype(np.int64) / 1e6
    values = table["v"]
    if not (np.all(np.diff(times) > 0) and np.all((values >= 0) & (values <= MAX_G_PER_KWH))):
        return None
    return times, np.ascontiguousarray(values)


def _slow(path: Path, lines: list[str], first: int, width: int, value_at: int) -> tuple[Any, Any]:
    """Row-by-row parse that names the first bad row."""
    import numpy as np

    times: list[float] = []
    values: list[float] = []
    last = -math.inf
    for line, row in enumerate(csv.reader(lines[first:]), start=first + 1):
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        try:
            if len(row) != width:
                raise ValueError(f"expected {width} columns, found {len(row)}")
            t = _parse_time(row[0])
            v = float(row[value_at])
            if not 0.0 <= v <= MAX_G_PER_KWH:
                raise ValueError(f"intensity {row[value_at].strip()!r} is not 0–5000 g/kWh")
            if t <= last:
                raise ValueError(f"time {row[0].strip()} is not after the previous row's")
        except ValueError as e:
            raise ConfigError(f"{path}:{line}: {e}") from None
        times.append(t)
        values.append(v)
        last = t
    return np.array(times), np.array(values)


def _parse_time(text: str) -> float:
    """Unix seconds of an ISO 8601 time (UTC without an offset); ValueError if it is not one."""
    text = text.strip()
    if not ISO_DATE.match(text):
        raise ValueError(f"{text!r} is not an ISO 8601 time (it must start with a date)")
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"  # Python 3.10's fromisoformat lacks "Z"
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO 8601 time") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.timestamp()


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True

"""Spot interruption rates per GPU and region, from a user's CSV.

Interruption rates differ by region (some run several times the average),
so ``greenml plan spot --interruption-rates CSV`` takes rows of
``gpu,region,rate_per_hour[,source]``. A region the file does not list falls
back to the packaged default for the GPU, and the plan says so.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from greenml.errors import ConfigError

COLUMNS = ("gpu", "region", "rate_per_hour")


@dataclass(frozen=True)
class RegionalRate:
    """One row: interruptions per hour of ``gpu`` in ``region``."""

    gpu: str
    region: str
    per_hour: float
    source: str  # the row's source column; may be empty
    line: int


@dataclass(frozen=True)
class AppliedRate:
    """The rate used for one region, and where it came from."""

    region: str | None
    per_hour: float
    origin: str  # "csv" or "packaged default"
    source: str

    def describe(self, gpu: str) -> str:
        where = f" in {self.region}" if self.region else ""
        return f"{self.per_hour:.2%}/h for {gpu}{where}: {self.source}"

    def to_dict(self) -> dict[str, Any]:
        return {"region": self.region, "interruptions_per_hour": self.per_hour,
                "from": self.origin, "source": self.source}  # fmt: skip


def _region_key(text: str) -> tuple[str, str]:
    """``aws:us-east-1``, ``aws/us-east-1`` → (``aws``, ``us-east-1``); ``us-east-1`` → ("", …)."""
    cloud, sep, region = text.strip().lower().replace("/", ":").partition(":")
    return (cloud, region) if sep else ("", cloud)


@dataclass(frozen=True)
class RateTable:
    """The rows of one rates CSV."""

    path: str
    rows: tuple[RegionalRate, ...]

    @staticmethod
    def from_csv(path: str | Path) -> RateTable:
        """Read ``gpu,region,rate_per_hour[,source]`` (a rate like 0.05 or 5%).

        Raises:
            ConfigError: The file cannot be read, lacks a column, has an empty,
                non-numeric, negative or infinite rate, repeats a GPU and region,
                or has no rows. One line, naming the file and its line.
        """
        name = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read interruption rates {name}: {_one_line(exc)}") from None
        try:
            rows = _rows(text, name)
        except csv.Error as exc:
            raise ConfigError(f"{name}: not a CSV file ({_one_line(exc)})") from None
        if not rows:
            raise ConfigError(f"{name}: no rates (rows of {','.join(COLUMNS)}[,source])")
        return RateTable(name, tuple(rows))

    def lookup(self, gpu: str, region: str) -> RegionalRate | None:
        """The row for this GPU in this region (an exact region before a bare one)."""
        cloud, bare = _region_key(region)
        name = gpu.strip().upper()
        matches = []
        for row in self.rows:
            if row.gpu.upper() not in name:
                continue
            row_cloud, row_bare = _region_key(row.region)
            if row_bare != bare or (row_cloud and cloud and row_cloud != cloud):
                continue
            exact = (row_cloud == cloud, row.gpu.upper() == name)
            matches.append((exact, row))
        if not matches:
            return None
        return max(matches, key=lambda m: m[0])[1]


def _rows(text: str, name: str) -> list[RegionalRate]:
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    columns = [c.strip().lower() for c in header or []]
    missing = [c for c in COLUMNS if c not in columns]
    if missing:
        raise ConfigError(
            f"{name}: needs the columns {','.join(COLUMNS)}[,source]; missing {', '.join(missing)}"
        )
    index = {c: columns.index(c) for c in (*COLUMNS, "source") if c in columns}
    seen: dict[tuple[str, tuple[str, str]], int] = {}
    out = []
    for number, cells in enumerate(reader, 2):
        if not any(c.strip() for c in cells):
            continue

        def cell(column: str, cells: list[str] = cells) -> str:
            i = index.get(column)
            return cells[i].strip() if i is not None and i < len(cells) else ""

        gpu, region = cell("gpu"), cell("region")
        if not gpu or not region:
            raise ConfigError(f"{name} line {number}: gpu and region must not be empty")
        rate = _rate(cell("rate_per_hour"), f"{name} line {number}")
        key = (gpu.upper(), _region_key(region))
        if key in seen:
            raise ConfigError(
                f"{name} line {number}: {gpu} in {region} is already on line {seen[key]}"
            )
        seen[key] = number
        out.append(RegionalRate(gpu, region, rate, cell("source"), number))
    return out


def _rate(text: str, where: str) -> float:
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100.0 if raw.endswith("%") else float(raw)
    except ValueError:
        raise ConfigError(f"{where}: rate_per_hour {raw!r} is not a number") from None
    if not (math.isfinite(value) and value >= 0):
        raise ConfigError(f"{where}: rate_per_hour must be a finite number >= 0, not {raw!r}")
    return value


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def regional_rates(gpu: str, regions: Sequence[str], table: RateTable | None) -> list[AppliedRate]:
    """The rate for ``gpu`` in each region: the CSV row, else the packaged default (said so).

    Without regions, the packaged default applies, and says why.

    Raises:
        ConfigError: A region needs the packaged default and the GPU has none.
    """
    from greenml.resilience.interval import interruption_rate

    def default(region: str | None, why: str) -> AppliedRate:
        try:
            known = interruption_rate(gpu)
        except ConfigError as exc:
            raise ConfigError(f"{why}; and {exc}") from None
        return AppliedRate(region, known.per_hour, "packaged default",
                           f"packaged default for {known.accelerator} ({why})")  # fmt: skip

    if table is None:
        return [default(None, "no --interruption-rates given")]
    if not regions:
        return [default(None, f"no --region given to look up in {table.path}")]
    out = []
    for region in regions:
        row = table.lookup(gpu, region)
        if row is None:
            out.append(default(region, f"{gpu} in {region} is not in {table.path}"))
        else:
            source = f"{table.path} line {row.line} ({row.gpu}, {row.region})"
            source += f": {row.source}" if row.source else ""
            out.append(AppliedRate(region, row.per_hour, "csv", source))
    return out

"""The label's reference set: versioned CSV rows per task class, and their 5 star bands.

The packaged set is ``data/label_reference_v1.csv`` (its origin is in
``data/SOURCES.md``); a newer set ships as ``_v2``, never as an edit of ``_v1``.
Bands split ``[min, max]`` of one task class into 5 equal widths: the band with
the lowest energy gives 5 stars. A band includes its lower edge; the top edge
of the range belongs to band 1 (1 star). A value outside the range is clamped
to 5 or 1 stars, and :func:`stars_for` says which way.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path

from greenml.data import packaged
from greenml.errors import ConfigError

REFERENCE_FILE = "label_reference_v1.csv"
STARS = 5


@dataclass(frozen=True)
class ReferenceModel:
    """One row of the reference set."""

    task_class: str
    model: str
    wh_per_1000_queries: float
    gpu: str
    source: str


@dataclass(frozen=True)
class Reference:
    """A versioned reference set: its file name, version, and rows."""

    name: str
    version: str
    models: tuple[ReferenceModel, ...]

    def task_classes(self) -> list[str]:
        return sorted({m.task_class for m in self.models})

    def of(self, task_class: str) -> list[ReferenceModel]:
        """The rows of one task class, most efficient first.

        Raises:
            ConfigError: The class is not in the set, or has no range to band.
        """
        rows = sorted(
            (m for m in self.models if m.task_class == task_class),
            key=lambda m: m.wh_per_1000_queries,
        )
        if not rows:
            known = ", ".join(self.task_classes())
            raise ConfigError(
                f"task class {task_class!r} is not in the reference set {self.name} "
                f"(it has: {known})"
            )
        if rows[0].wh_per_1000_queries == rows[-1].wh_per_1000_queries:
            raise ConfigError(f"the reference set {self.name} has no range for {task_class!r}")
        return rows


@dataclass(frozen=True)
class Band:
    """Stars and the energy range they stand for (Wh per 1,000 queries)."""

    stars: int
    low_wh: float
    high_wh: float


def load_reference(path: str | Path | None = None) -> Reference:
    """The packaged reference set, or a CSV in the same format.

    Raises:
        ConfigError: The file is missing, malformed, or has a non-positive value.
    """
    if path is None:
        name = REFERENCE_FILE
        text = packaged(name).read_text(encoding="utf-8")
    else:
        name = Path(path).name
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read the label reference {path}: {exc.strerror}") from exc
    rows = []
    for line, row in enumerate(csv.DictReader(io.StringIO(text)), start=2):
        try:
            value = float(row["wh_per_1000_queries"])
            model = ReferenceModel(
                row["task_class"].strip(), row["model"].strip(), value,
                row["gpu"].strip(), row["source"].strip(),
            )  # fmt: skip
        except (KeyError, TypeError, ValueError, AttributeError):
            raise ConfigError(f"{name}, line {line}: not a label reference row") from None
        if not math.isfinite(value) or value <= 0:
            raise ConfigError(f"{name}, line {line}: energy must be a positive number")
        rows.append(model)
    if not rows:
        raise ConfigError(f"the label reference {name} has no rows")
    found = re.search(r"_(v\d+)\.csv$", name)
    return Reference(name, found.group(1) if found else "custom", tuple(rows))


def bands(low: float, high: float) -> list[Band]:
    """The 5 equal-width bands of ``[low, high]``, 5 stars first."""
    width = (high - low) / STARS
    edges = [low + k * width for k in range(STARS)] + [high]
    return [Band(STARS - k, edges[k], edges[k + 1]) for k in range(STARS)]


def stars_for(value: float, low: float, high: float) -> tuple[int, str | None]:
    """Stars for a value, and ``below``/``above`` when it was clamped into the range."""
    if value < low:
        return STARS, "below"
    if value > high:
        return 1, "above"
    upper_edges = [band.low_wh for band in bands(low, high)[1:]]
    return STARS - sum(1 for edge in upper_edges if value >= edge), None

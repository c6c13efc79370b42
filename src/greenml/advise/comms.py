"""Energy of moving data: bytes × energy per byte of the link, from cited figures.

The table (``data/link_energy.csv``) gives kWh per GB by link type (``fixed``,
``mobile``, ``4g``, ``5g``, ``internet-2015``); each row cites its study (see
``data/SOURCES.md``). Published intensities disagree by an order of magnitude
depending on the boundary (access network only, or core and access) and the
year, so every result carries ``UNCERTAINTY_REL`` and names its link.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass

from greenml.data import packaged
from greenml.errors import ConfigError
from greenml.quantities import J_PER_KWH

BYTES_PER_GB = 1e9
UNCERTAINTY_REL = 0.5
"""±50 %: the spread between the cited studies for one link type is about 2x."""


@dataclass(frozen=True)
class Link:
    """A link type's energy per gigabyte, and its source."""

    name: str
    kwh_per_gb: float
    source: str

    @property
    def j_per_byte(self) -> float:
        return self.kwh_per_gb * J_PER_KWH / BYTES_PER_GB

    def energy_j(self, n_bytes: float) -> float:
        """Energy to move ``n_bytes`` over this link."""
        return max(n_bytes, 0.0) * self.j_per_byte


@functools.cache
def links() -> dict[str, Link]:
    """Every packaged link type by name."""
    text = packaged("link_energy.csv").read_text(encoding="utf-8")
    return {
        r["link"]: Link(r["link"], float(r["kwh_per_gb"]), r["source"])
        for r in csv.DictReader(text.splitlines())
    }


def link(name: str) -> Link:
    """A packaged link type, or ``NAME=KWH_PER_GB`` for your own figure.

    Raises:
        ConfigError: Unknown link, or a figure that is not a number >= 0.
    """
    key, sep, value = name.partition("=")
    if sep:
        try:
            kwh = float(value)
        except ValueError:
            kwh = -1.0
        if not kwh >= 0 or kwh == float("inf"):
            raise ConfigError(f"link {name!r}: give NAME=KWH_PER_GB with a number >= 0")
        return Link(key.strip() or "custom", kwh, "given by the user")
    found = links().get(name.strip().lower())
    if found is None:
        known = ", ".join(links())
        raise ConfigError(f"unknown link {name!r}; use one of {known} or NAME=KWH_PER_GB")
    return found

"""The project's yearly footprint: what the runs in scope add up to, scaled to a year.

The runs span a period (first start to last end, at least one day, or as given);
a year is that footprint × (365.25 days ÷ the period). Each candidate's share of a
base (GPU energy, all energy, carbon, cost) is turned into a yearly saving here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from greenml.quantities import J_PER_KWH

YEAR_S = 365.25 * 86400.0
MIN_PERIOD_S = 86400.0


@dataclass(frozen=True)
class Footprint:
    """Per-year totals of the runs in scope (J, g CO2eq, USD) and how the year was scaled."""

    runs: tuple[str, ...]
    period_s: float
    per_year: float  # the factor: a year ÷ the period
    gpu_j: float
    energy_j: float
    co2_g: float
    usd: float | None

    @property
    def g_per_j(self) -> float:
        """The footprint's mean intensity (g CO2eq per IT joule, PUE included)."""
        return self.co2_g / self.energy_j if self.energy_j > 0 else 0.0

    @property
    def usd_per_j(self) -> float | None:
        return None if self.usd is None or self.energy_j <= 0 else self.usd / self.energy_j

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": len(self.runs),
            "period_days": self.period_s / 86400.0,
            "year_factor": self.per_year,
            "gpu_kwh_per_year": self.gpu_j / J_PER_KWH,
            "kwh_per_year": self.energy_j / J_PER_KWH,
            "co2_kg_per_year": self.co2_g / 1000.0,
            "usd_per_year": self.usd,
        }


def gpu_j(record: Mapping[str, Any]) -> float:
    gpu = ((record.get("energy") or {}).get("components") or {}).get("gpu") or {}
    return float(gpu.get("energy_j") or 0.0)


def co2_g(record: Mapping[str, Any]) -> float | None:
    carbon = record.get("carbon") or {}
    kg = carbon.get("kg")
    if carbon.get("status", "ok") != "ok" or not isinstance(kg, (int, float)):
        return None
    return float(kg) * 1000.0


def usd(record: Mapping[str, Any]) -> float | None:
    cost = record.get("cost") or {}
    value = cost.get("usd")
    if cost.get("status", "ok") != "ok" or not isinstance(value, (int, float)):
        return None
    return float(value)


def _instant(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def period_of(records: Sequence[Mapping[str, Any]]) -> float:
    """Seconds from the first run's start to the last run's end, at least a day."""
    starts = [_instant(r["started_at"]) for r in records if r.get("started_at")]
    ends = [s + float(r.get("duration_s") or 0.0)
            for r, s in zip(records, starts, strict=False)]  # fmt: skip
    if not starts:
        return MIN_PERIOD_S
    return max(MIN_PERIOD_S, max(ends) - min(starts))


def footprint(
    records: Sequence[Mapping[str, Any]], period_s: float | None = None
) -> Footprint:
    """The yearly footprint of the completed runs in ``records``."""
    done = [r for r in records if r.get("status") == "completed"]
    period = period_s if period_s is not None else period_of(done)
    factor = YEAR_S / period
    energy = sum(float((r.get("energy") or {}).get("total_j") or 0.0) for r in done)
    carbon = [co2_g(r) for r in done]
    money = [usd(r) for r in done]
    return Footprint(
        runs=tuple(str(r["id"]) for r in done),
        period_s=period,
        per_year=factor,
        gpu_j=sum(gpu_j(r) for r in done) * factor,
        energy_j=energy * factor,
        co2_g=sum(c or 0.0 for c in carbon) * factor,
        usd=None if not done or any(m is None for m in money)
        else sum(m or 0.0 for m in money) * factor,
    )

"""What a plan says: its chunks, emissions and cost, and the saving against "start now, here".

Built by :func:`greenml.schedule.planner.plan_job` (and re-exported there).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

LEVEL = 0.9


@dataclass(frozen=True)
class Chunk:
    """One piece of the plan: run from ``start`` to ``end`` in ``location``."""

    start: datetime
    end: datetime
    location: str

    @property
    def duration_s(self) -> float:
        return (self.end - self.start).total_seconds()

    def to_dict(self) -> dict[str, Any]:
        return {"start": _iso(self.start), "end": _iso(self.end), "location": self.location,
                "duration_s": self.duration_s}  # fmt: skip


@dataclass(frozen=True)
class Option:
    """The best placement found in one allowed location (``start`` None: none meets the cap)."""

    location: str
    start: datetime | None
    mean_intensity_g_per_kwh: float | None
    mean_price_usd_per_mwh: float | None
    forecast_source: str

    def to_dict(self) -> dict[str, Any]:
        return {"location": self.location, "start": _iso(self.start) if self.start else None,
                "mean_intensity_g_per_kwh": self.mean_intensity_g_per_kwh,
                "mean_price_usd_per_mwh": self.mean_price_usd_per_mwh,
                "forecast_source": self.forecast_source}  # fmt: skip


@dataclass(frozen=True)
class Plan:
    """Where and when to run, what it emits and costs, and the saving against the baseline.

    Intensities are forecasts (g/kWh, the source in ``forecast_source``);
    ``expected_g`` is the job's IT energy × the mean forecast intensity (no
    PUE); saving percentages are 100 × (1 − plan ÷ baseline).
    """

    chunks: tuple[Chunk, ...]
    expected_g: float | None
    mean_intensity_g_per_kwh: float
    baseline_mean_intensity_g_per_kwh: float
    saving_pct: float
    saving_pct_interval: tuple[float, float]
    forecast_source: str
    location: str = ""
    baseline_location: str = ""
    baseline_forecast_source: str = ""
    baseline_start: datetime | None = None
    baseline_g: float | None = None
    energy_kwh: float | None = None
    mean_price_usd_per_mwh: float | None = None
    baseline_mean_price_usd_per_mwh: float | None = None
    expected_usd: float | None = None
    baseline_usd: float | None = None
    cost_change_pct: float | None = None
    price_source: str | None = None
    objective: str = "least carbon"
    uncertainty: str = ""
    interval_level: float = LEVEL
    options: tuple[Option, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def start(self) -> datetime:
        """Start of the first chunk."""
        return self.chunks[0].start

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form (times ISO 8601 UTC)."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, datetime):
                value = _iso(value)
            elif name in ("chunks", "options"):
                value = [item.to_dict() for item in value]
            elif isinstance(value, tuple):
                value = list(value)
            out[name] = value
        out["start"] = _iso(self.start)
        return out


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")

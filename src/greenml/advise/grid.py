"""Carbon intensity for an advisor: a location the user gave, a cloud region, or a run's.

Every figure keeps its source; ``None`` (unknown) is said, never filled in.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from greenml.errors import ConfigError


@dataclass(frozen=True)
class Grid:
    """A carbon intensity (gCO2eq/kWh) and where it comes from."""

    g_per_kwh: float | None
    source: str

    def co2_g(self, energy_j: float) -> float | None:
        """Grams CO2eq for ``energy_j`` of facility energy, ``None`` when unknown."""
        return None if self.g_per_kwh is None else energy_j / 3.6e6 * self.g_per_kwh


def grid_for(
    *,
    zone: str | None = None,
    region: str | None = None,
    country: str | None = None,
    ci: float | None = None,
    at: datetime | None = None,
) -> Grid | None:
    """The intensity at a location given explicitly; ``None`` when none was given.

    Raises:
        ConfigError: Unknown zone, region or country.
    """
    if all(v is None for v in (zone, region, country, ci)):
        return None
    from greenml.accounting.location import resolve_intensity_source
    from greenml.estimation.inputs import resolve_intensity

    source, description = resolve_intensity_source(
        region=region, zone=zone, country=country, ci=ci
    )
    value, text = resolve_intensity(source, description, at or datetime.now(timezone.utc))
    return Grid(value, text)


def region_grid(provider: str, region: str) -> Grid:
    """The packaged intensity of a cloud region; unknown (and why) if not packaged."""
    try:
        found = grid_for(region=f"{provider}:{region}")
    except ConfigError as exc:
        return Grid(None, f"unknown for {provider}:{region}: {exc}")
    return found if found is not None else Grid(None, f"unknown for {provider}:{region}")


def run_grid(record: dict[str, Any]) -> Grid | None:
    """The intensity a stored run was accounted with, if any."""
    carbon = record.get("carbon") or {}
    value = carbon.get("intensity_g_per_kwh")
    if carbon.get("status") != "ok" or not isinstance(value, (int, float)):
        return None
    return Grid(float(value), f"the run's intensity: {carbon.get('source', 'unknown source')}")


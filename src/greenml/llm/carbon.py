"""Grid intensity of the hour a request ran in, from the user's location settings."""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from greenml.accounting.intensity import IntensitySource

log = logging.getLogger("greenml")


class HourlyIntensity:
    """gCO2eq/kWh per Unix hour, looked up once an hour; ``None`` without a location.

    Args:
        source: The intensity source (``resolve_intensity_source``), or None.
        description: How it was chosen, or the hint why there is none.
    """

    def __init__(self, source: IntensitySource | None, description: str) -> None:
        self.source = source
        self.description = description
        self._cache: dict[int, float | None] = {}

    def at(self, time_s: float) -> float | None:
        if self.source is None:
            return None
        hour = int(time_s // 3600)
        if hour not in self._cache:
            try:
                grid = self.source.intensity(hour * 3600.0, hour * 3600.0 + 3600.0)
                value = float(grid.series.value_at(time_s))
                self._cache[hour] = value if math.isfinite(value) else None
                self.description = grid.provenance.describe()
            except Exception as exc:  # a source that cannot answer: carbon unknown, said once
                log.warning("greenml: carbon intensity unavailable: %s", exc)
                self._cache[hour] = None
        return self._cache[hour]

    def co2eq_g(self, energy_j: float, time_s: float) -> tuple[float | None, float | None]:
        """(grams CO2eq, intensity used) of ``energy_j`` drawn at ``time_s``."""
        g_per_kwh = self.at(time_s)
        if g_per_kwh is None:
            return None, None
        return energy_j / 3.6e6 * g_per_kwh, g_per_kwh

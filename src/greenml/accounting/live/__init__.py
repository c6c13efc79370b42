"""Live grid carbon intensity from provider APIs (httpx, imported only when used).

Each source implements :class:`greenml.accounting.intensity.IntensitySource`
and answers with a :class:`~greenml.accounting.intensity.GridIntensity` whose
provenance names the API, the location, the time resolution, the kind
(average or marginal) and the scope (direct or life-cycle).
"""

from __future__ import annotations

from greenml.accounting.live.electricitymaps import ElectricityMapsSource
from greenml.accounting.live.http import HttpSettings
from greenml.accounting.live.ukci import UkCarbonIntensitySource
from greenml.accounting.live.watttime import SignalIndex, WattTimeSource
from greenml.errors import IntensityApiError

__all__ = [
    "ElectricityMapsSource",
    "HttpSettings",
    "IntensityApiError",
    "SignalIndex",
    "UkCarbonIntensitySource",
    "WattTimeSource",
]

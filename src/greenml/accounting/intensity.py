"""Grid carbon intensity: the interface every source implements, and its provenance.

Every intensity greenml uses says where it came from, how finely it is
resolved in time, whether it is an average or a marginal figure, and whether
it counts direct (combustion) or life-cycle emissions. A source answers with a
:class:`GridIntensity` covering the span asked for, or raises.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from greenml.accounting.series import StepSeries
from greenml.errors import ConfigError

MAX_G_PER_KWH = 5000.0
"""The highest intensity accepted anywhere (g/kWh), inclusive: above every real grid."""

Resolution = Literal["yearly", "monthly", "hourly", "sub-hourly", "live", "user"]
Kind = Literal["average", "marginal"]
Scope = Literal["direct", "lifecycle"]


@dataclass(frozen=True)
class IntensityProvenance:
    """Where an intensity figure comes from.

    Attributes:
        source: Who published it, precisely enough to look it up, e.g.
            ``"Electricity Maps CSV export, DE-LU 2023"`` or
            ``"Our World in Data / Ember, 2023"``.
        location: The location it applies to, as resolved (``DE``,
            ``us-central1``, ``DE-LU``).
        resolution: Time resolution of the values.
        kind: ``average`` (the grid's mix) or ``marginal`` (the plant that
            answers extra load, e.g. WattTime's MOER).
        scope: ``direct`` (combustion only) or ``lifecycle`` (LCA factors).
        year: The data year for yearly figures.
    """

    source: str
    location: str
    resolution: Resolution
    kind: Kind
    scope: Scope
    year: int | None = None

    def describe(self) -> str:
        """One line for tables and reports."""
        year = f" {self.year}" if self.year else ""
        return (
            f"{self.source} ({self.location}{year}; {self.resolution}, {self.kind}, {self.scope})"
        )


@dataclass(frozen=True)
class GridIntensity:
    """Carbon intensity in gCO2eq/kWh over time, with its provenance."""

    series: StepSeries
    provenance: IntensityProvenance


class IntensitySource(Protocol):
    """Anything that can give the grid intensity of one location over a span."""

    def intensity(self, start_s: float, end_s: float) -> GridIntensity:
        """Intensity covering [start_s, end_s] (Unix seconds).

        Raises:
            ConfigError: The source has no data for (part of) the span; the
                message names the missing span.
            GreenmlError: The source could not be reached or read.
        """
        ...


class ConstantSource:
    """One intensity for all time: a figure the user gives (``--ci``) or a yearly value."""

    def __init__(self, g_per_kwh: float, provenance: IntensityProvenance) -> None:
        if not 0.0 <= g_per_kwh <= MAX_G_PER_KWH:
            raise ConfigError(f"carbon intensity must be 0–5000 gCO2eq/kWh, got {g_per_kwh}")
        self._intensity = GridIntensity(StepSeries.constant(g_per_kwh, "g/kWh"), provenance)

    @classmethod
    def user(cls, g_per_kwh: float) -> ConstantSource:
        """A figure given on the command line or in the config file."""
        return cls(
            g_per_kwh, IntensityProvenance("given by the user", "-", "user", "average", "lifecycle")
        )

    def intensity(self, start_s: float, end_s: float) -> GridIntensity:
        return self._intensity


def gap_note(estimated: int, hours: int) -> str:
    """How many of a data set's hourly intensities its provider estimated, said as what it is.

    About the grid data, not the run: the provider filled gaps in its source data
    (``30 of 8760 hourly values in the provider's data were estimated to fill gaps``).
    """
    return (
        f"{estimated} of {hours} hourly values in the provider's data were estimated "
        "to fill gaps"
    )

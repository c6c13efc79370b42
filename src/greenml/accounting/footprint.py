"""The footprint beyond location-based carbon: market-based carbon, water, embodied carbon.

:class:`Footprint` is prepared from the options before a run or an estimate
(bad input raises :class:`~greenml.errors.ConfigError` there, exit 2) and
gives the ``carbon_market``, ``water`` and ``embodied`` blocks once the energy
and the location-based carbon are known. Each block says how it was obtained,
from which source and with what uncertainty; a part that cannot be known is
``null`` with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError, GreenmlError

if TYPE_CHECKING:
    from greenml.accounting.market import MarketDeclaration
    from greenml.accounting.water import Wue
    from greenml.measure.measurement import Measurement


@dataclass(frozen=True)
class Footprint:
    """What the user declared (or the defaults) for the blocks beyond location-based carbon.

    Attributes:
        market: Certificates, supplier factor and offsets (``None``: nothing declared).
        wue: On-site water usage effectiveness.
        place: Where the run is (``--zone``/``--region``/``--country`` value) for
            the provider's CFE share and the off-site water of electricity.
        region: The cloud region, if one was given (provider CFE share).
        embodied_kg: A per-GPU embodied figure the user gives.
        lifetime_years: The devices' expected lifespan.
        lifetime_use: Share of that lifespan the devices are in use (None: all of it).
    """

    market: MarketDeclaration | None
    wue: Wue
    place: str | None = None
    region: str | None = None
    embodied_kg: float | None = None
    lifetime_years: float | None = None
    lifetime_use: float | None = None

    def blocks(
        self,
        *,
        it_kwh: float,
        carbon: Mapping[str, Any],
        devices: Sequence[tuple[str, float]],
        machine_hours: float,
        year: int,
        strict: bool = False,
    ) -> dict[str, Any]:
        """``{"carbon_market", "water", "embodied"}`` of a run or an estimate.

        Raises:
            ConfigError: Only when ``strict`` (an estimate): certificates covering
                more energy than was used. A run's block says so instead.
        """
        from greenml.accounting.market import market_block_from_carbon
        from greenml.accounting.water import offsite_water, water_block
        from greenml.hardware.embodied import (
            DEFAULT_LIFETIME_YEARS,
            LIFETIME_SOURCE,
            embodied_block,
        )

        out: dict[str, Any] = {}
        try:
            out["carbon_market"] = market_block_from_carbon(carbon, self.market, self.region, year)
        except GreenmlError as exc:  # e.g. certificates cover more energy than was used
            if strict:
                raise
            out["carbon_market"] = {"kg": None, "status": "unavailable", "reason": str(exc)}
        facility_kwh = carbon.get("facility_energy_kwh")
        facility = float(facility_kwh) if isinstance(facility_kwh, (int, float)) else it_kwh
        out["water"] = water_block(it_kwh, facility, self._wue_for(carbon),
                                   offsite_water(self.place), self.place or "")  # fmt: skip
        if not isinstance(facility_kwh, (int, float)):
            out["water"]["note_energy"] = "no PUE known: off-site water on IT energy"
        life = self.lifetime_years or DEFAULT_LIFETIME_YEARS
        said = "given by the user (--lifetime-years)" if self.lifetime_years else LIFETIME_SOURCE
        out["embodied"] = embodied_block(
            list(devices), embodied_kg=self.embodied_kg, lifetime_years=life,
            machine_hours=machine_hours, lifetime_source=said, in_use=self.lifetime_use,
        )  # fmt: skip
        return out

    def _wue_for(self, carbon: Mapping[str, Any]) -> Wue:
        """The on-site WUE: none for a personal machine unless the user gave one."""
        from greenml.accounting.pue import DEFAULT_PUE
        from greenml.accounting.water import DEFAULT_WUE, NO_COOLING_WUE

        personal = carbon.get("pue_source") == DEFAULT_PUE["personal"].source
        return NO_COOLING_WUE if personal and self.wue is DEFAULT_WUE else self.wue

    def at(self, location: str | None) -> Footprint:
        """This footprint placed where an intensity source says it is (``DE``,
        ``gcp:us-central1``): a cloud region also gives the provider's CFE share."""
        from dataclasses import replace

        from greenml.accounting.static import cloud_region_place

        if not location or location in ("-", "user"):
            return self
        if ":" in location:
            return replace(self, place=cloud_region_place(location), region=location)
        return replace(self, place=location)

    def run_blocks(self, measurement: Measurement, carbon: Mapping[str, Any]) -> dict[str, Any]:
        """The blocks of a measured run: its GPUs for its duration."""
        hours = measurement.duration_s / 3600
        gpus = measurement.components.get("gpu")
        devices = [(d.name or key, hours) for key, d in (gpus.devices if gpus else {}).items()]
        return self.blocks(
            it_kwh=measurement.total_kwh, carbon=carbon, devices=devices, machine_hours=hours,
            year=measurement.started_at.year,
        )  # fmt: skip


def prepare_footprint(
    *,
    supplier_ci: float | None = None,
    certificates: Sequence[str] = (),
    market_file: str | None = None,
    wue: str | None = None,
    zone: str | None = None,
    region: str | None = None,
    country: str | None = None,
    embodied_kg: float | None = None,
    lifetime_years: float | None = None,
    lifetime_use: float | None = None,
) -> Footprint:
    """Check the options and build the :class:`Footprint`.

    Raises:
        ConfigError: A bad share, certificate, supplier factor, WUE, embodied
            figure, lifetime or share of the lifetime in use.
    """
    from greenml.accounting.market import declaration
    from greenml.accounting.static import cloud_region_place
    from greenml.accounting.water import wue_for

    market = declaration(supplier_ci, certificates, market_file)
    if embodied_kg is not None and (not math.isfinite(embodied_kg) or embodied_kg < 0):
        raise ConfigError(f"--embodied-kg must be a number ≥ 0, got {embodied_kg}")
    if lifetime_years is not None and (not math.isfinite(lifetime_years)
                                       or not 0 < lifetime_years <= 30):  # fmt: skip
        raise ConfigError(f"--lifetime-years must be in (0, 30], got {lifetime_years}")
    if lifetime_use is not None and (not math.isfinite(lifetime_use)
                                     or not 0 < lifetime_use <= 1):  # fmt: skip
        raise ConfigError(f"--lifetime-use must be a share in (0, 1], got {lifetime_use}")
    place = country or zone or (cloud_region_place(region) if region else None)
    return Footprint(market, wue_for(wue), place, region, embodied_kg, lifetime_years,
                     lifetime_use)  # fmt: skip

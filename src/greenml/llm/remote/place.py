"""Where a provider's model runs: the grid intensity and water of its electricity.

Given explicitly (``region=``, ``country=``, ``ci=``), the figure is the packaged
table's for that place. Otherwise a known provider gets a labelled assumption
(OpenAI and Anthropic publish no per-request serving region; both serve mainly
from US data centres: the US yearly average, on OpenAI's Microsoft Azure or
Anthropic's AWS fleet WUE), and any other provider's carbon is unknown, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from greenml.accounting.carbon import intensity_uncertainty
from greenml.accounting.water import DEFAULT_WUE, PROVIDER_WUE, OffsiteWater, Wue, offsite_water
from greenml.quantities import J_PER_KWH

PUE_ASSUMED = 1.2  # matches the overhead in greenml.llm.remote.energy_model (IT = facility ÷ PUE)
_DEFAULTS = {
    "openai": (
        "US",
        "azure",
        "OpenAI publishes no serving region; assumed US grid, Azure fleet WUE",
    ),
    "anthropic": (
        "US",
        "aws",
        "Anthropic publishes no serving region; assumed US grid, AWS fleet WUE",
    ),
}


@dataclass(frozen=True)
class Place:
    """Intensity (gCO2eq/kWh) and water of the electricity a provider's model uses."""

    intensity_g_per_kwh: float | None
    intensity_source: str
    intensity_uncertainty_rel: float
    wue: Wue
    offsite: OffsiteWater | None
    note: str = ""

    def carbon_g(
        self, energy_j: float, uncertainty_j: float
    ) -> tuple[float | None, float | None, str]:
        """CO2eq of a facility energy, its uncertainty (both in g) and the source."""
        if self.intensity_g_per_kwh is None:
            return None, None, self.intensity_source
        grams = energy_j / J_PER_KWH * self.intensity_g_per_kwh
        rel = (uncertainty_j / energy_j if energy_j > 0 else 0.0) + self.intensity_uncertainty_rel
        return grams, grams * rel, self.intensity_source

    def water_ml(self, energy_j: float) -> tuple[float | None, str]:
        """On-site (WUE × IT energy) plus off-site (EWIF × facility energy) water, in mL."""
        kwh = energy_j / J_PER_KWH
        onsite_l = kwh / PUE_ASSUMED * self.wue.l_per_kwh
        if self.offsite is None:
            return None, f"off-site water unknown (no country); on-site WUE: {self.wue.source}"
        offsite_l = kwh * self.offsite.l_per_kwh
        source = f"on-site WUE: {self.wue.source}; off-site: {self.offsite.source}"
        return (onsite_l + offsite_l) * 1000, source


def place_for(
    provider: str,
    *,
    region: str | None = None,
    country: str | None = None,
    ci: float | None = None,
    wue: str | float | None = None,
) -> Place:
    """The place of ``provider``'s serving, as given, else its labelled default.

    Raises:
        ConfigError: An unknown region or country, or a bad ``ci`` or ``wue``.
    """
    from greenml.accounting import static
    from greenml.accounting.intensity import ConstantSource
    from greenml.accounting.water import country_of, wue_for

    key = provider.strip().lower()
    default = _DEFAULTS.get(key)
    water = (
        wue_for(wue) if wue is not None else (PROVIDER_WUE[default[1]] if default else DEFAULT_WUE)
    )
    note = "" if (region or country or ci is not None) else (default[2] if default else "")
    if ci is not None:
        source = ConstantSource.user(ci)
        where = country
    elif region:
        source = static.cloud_region_source(region)
        where = country or static.cloud_region_place(region)
    elif country:
        source = static.country_source(country)
        where = country
    elif default:
        source = static.country_source(default[0])
        where = default[0]
    else:
        reason = (
            f"carbon unknown: the serving region of provider {provider!r} is not known; "
            "give region= or country="
        )
        return Place(None, reason, 0.0, water, None)
    g = source.intensity(0.0, 0.0)
    prov = g.provenance
    described = prov.describe() + (f" — {note}" if note else "")
    place = country_of(where) if where else None
    return Place(
        g.series.value_at(0.0),
        described,
        intensity_uncertainty(prov.resolution, 0.0),
        water,
        offsite_water(place or where),
        note,
    )

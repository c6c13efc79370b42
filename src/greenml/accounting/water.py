"""Water consumed for a run's electricity: on-site (cooling) and off-site (generation).

    on-site L  = IT energy kWh × WUE (L/kWh, the operator's water usage effectiveness)
    off-site L = facility energy kWh × EWIF (L/kWh, water consumed to generate it)

WUE comes from the user (``--wue``), the provider's published fleet figure
(``--wue aws``) or a stated industry default; EWIF from the packaged
per-country table (``data/water_countries.csv``: generation mix × Macknick et
al. 2012 technology factors; see ``data/SOURCES.md``). Every part carries its
source and relative uncertainty; an unknown part is ``null`` with the reason,
never a silent zero.
"""

from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass
from typing import Any

from greenml.data import packaged
from greenml.errors import ConfigError

WUE_MAX_L_PER_KWH = 10.0
"""Above any published figure (evaporative cooling in hot, dry places peaks near 4 L/kWh)."""


@dataclass(frozen=True)
class Wue:
    """On-site water usage effectiveness and where it comes from."""

    l_per_kwh: float
    source: str
    uncertainty_rel: float


DEFAULT_WUE = Wue(
    1.8,
    "default: US data-centre average on-site WUE, 1.8 L/kWh (Shehabi et al., 'United States "
    "Data Center Energy Usage Report', LBNL-1005775, 2016); not the operator's own figure",
    0.6,
)
NO_COOLING_WUE = Wue(
    0.0, "personal machine (PUE personal): no data-centre cooling, no on-site water", 0.0
)
"""On-site water where no facility cools the machine: the default WUE is a data centre's."""
_AWS = (
    "AWS global data-centre WUE 2023, 0.18 L/kWh (Amazon 2023 Sustainability Report); "
    "fleet average, not the region's"
)
_AZURE = (
    "Microsoft global data-centre WUE FY2024, 0.30 L/kWh (Microsoft, 'Sustainable by design: "
    "next-generation datacenters', Dec 2024); fleet average, not the region's"
)
PROVIDER_WUE: dict[str, Wue] = {"aws": Wue(0.18, _AWS, 0.5), "azure": Wue(0.30, _AZURE, 0.5)}
_ALIASES = {"amazon": "aws", "microsoft": "azure"}
_CITY_COUNTRY = {
    "arizona": "US", "berlin": "DE", "brussels": "BE", "california": "US", "cardiff": "GB",
    "chennai": "IN", "columbus": "US", "dallas": "US", "dammam": "SA", "delhi": "IN",
    "doha": "QA", "eemshaven": "NL", "england": "GB", "frankfurt": "DE", "gavle": "SE",
    "georgia": "US", "helsinki": "FI", "illinois": "US", "iowa": "US", "jakarta": "ID",
    "johannesburg": "ZA", "las vegas": "US", "london": "GB", "los angeles": "US",
    "madrid": "ES", "melbourne": "AU", "milan": "IT", "montréal": "CA", "mumbai": "IN",
    "northern virginia": "US", "oklahoma": "US", "oregon": "US", "osaka": "JP", "paris": "FR",
    "pune": "IN", "salt lake city": "US", "santiago": "CL", "seoul": "KR", "stockholm": "SE",
    "sydney": "AU", "sāo paulo": "BR", "tel aviv": "IL", "texas": "US", "tokyo": "JP",
    "toronto": "CA", "turin": "IT", "virginia": "US", "warsaw": "PL", "washington": "US",
    "wyoming": "US", "zürich": "CH", "great britain": "GB", "usa": "US",
}  # fmt: skip
"""Where cloud regions and zones name a city or state: its country (ISO 3166 alpha-2)."""


@dataclass(frozen=True)
class OffsiteWater:
    """Water consumed per kWh generated in a country."""

    country: str
    l_per_kwh: float
    year: int | None
    uncertainty_rel: float
    source: str


def wue_for(text: str | float | None) -> Wue:
    """``--wue``: a value in L/kWh, a provider (``aws``, ``azure``), or the default.

    Raises:
        ConfigError: A value outside [0, 10] L/kWh (implausible) or an unknown provider.
    """
    if text is None:
        return DEFAULT_WUE
    try:
        value = float(text)
    except ValueError:
        key = str(text).strip().lower()
        key = _ALIASES.get(key, key)
        if key not in PROVIDER_WUE:
            known = ", ".join(PROVIDER_WUE)
            raise ConfigError(
                f"--wue {text!r}: give L/kWh or a provider that publishes one ({known})"
            ) from None
        return PROVIDER_WUE[key]
    if not math.isfinite(value) or not 0 <= value <= WUE_MAX_L_PER_KWH:
        raise ConfigError(
            f"--wue {text!r}: a WUE must be between 0 and {WUE_MAX_L_PER_KWH:g} L/kWh "
            "(published figures run from about 0 to 4)"
        )
    return Wue(value, "given by the user", 0.0)


def offsite_water(country: str | None) -> OffsiteWater | None:
    """The off-site water intensity of a country (alpha-2/3 code, name, or a city a cloud
    region names); ``None`` if not known."""
    if not country:
        return None
    alpha3 = _alpha3(country)
    row = _table().get(alpha3 or "")
    if row is None:
        return None
    return row


def water_block(
    it_kwh: float, facility_kwh: float, wue: Wue, offsite: OffsiteWater | None, where: str
) -> dict[str, Any]:
    """The ``water`` block: litres on-site, off-site and in all, with sources.

    Args:
        it_kwh: IT energy (what WUE is defined on).
        facility_kwh: Facility energy (what the grid generated).
        wue: On-site WUE.
        offsite: The grid's water intensity (``None``: not known for ``where``).
        where: The location setting, for the reason when ``offsite`` is unknown.
    """
    onsite_l = it_kwh * wue.l_per_kwh
    block: dict[str, Any] = {
        "status": "ok", "litres": None, "onsite_l": onsite_l,
        "wue_l_per_kwh": wue.l_per_kwh, "wue_source": wue.source,
        "onsite_uncertainty_rel": wue.uncertainty_rel,
        "offsite_l": None, "method": "estimated",
    }  # fmt: skip
    if offsite is None:
        block["status"] = "partial"
        block["offsite_reason"] = (
            f"no off-site water intensity for {where or 'an unknown location'}: pass --country"
        )
        block["litres"] = onsite_l
        block["uncertainty_rel"] = wue.uncertainty_rel
        block["note"] = "litres is the on-site part only (a lower bound)"
        return block
    offsite_l = facility_kwh * offsite.l_per_kwh
    total = onsite_l + offsite_l
    spread = math.hypot(onsite_l * wue.uncertainty_rel, offsite_l * offsite.uncertainty_rel)
    block.update(
        litres=total, offsite_l=offsite_l, ewif_l_per_kwh=offsite.l_per_kwh,
        offsite_source=offsite.source, offsite_uncertainty_rel=offsite.uncertainty_rel,
        uncertainty_rel=spread / total if total > 0 else 0.0,
    )  # fmt: skip
    return block


def country_of(location: str | None) -> str | None:
    """The country a ``--zone``/``--region`` location lies in (alpha-2), if it can be told."""
    if not location:
        return None
    from greenml.accounting import static

    text = location.strip()
    return static.country_code(text.split("-")[0]) or _CITY_COUNTRY.get(text.lower())


@functools.cache
def _table() -> dict[str, OffsiteWater]:
    text = packaged("water_countries.csv").read_text(
        encoding="utf-8"
    )
    out = {}
    for r in csv.DictReader(text.splitlines()):
        year = int(r["year"]) if r["year"].strip() else None
        source = (
            f"{r['name']} {year or ''} generation mix (Our World in Data / Ember) × operational "
            "water consumption per technology (Macknick et al. 2012, medians)"
        )
        out[r["alpha3"]] = OffsiteWater(r["alpha3"], float(r["l_per_kwh"]), year,
                                        float(r["uncertainty_rel"]), source)  # fmt: skip
    return out


def _alpha3(country: str) -> str | None:
    from greenml.accounting import static

    alpha2 = static.country_code(country) or country_of(country)
    return None if alpha2 is None else static.alpha3_of(alpha2)

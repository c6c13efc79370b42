"""Yearly grid carbon intensity per country, cloud region and grid zone.

Each lookup returns a :class:`~greenml.accounting.intensity.ConstantSource`
whose provenance names the publisher and data year (see ``data/SOURCES.md``):

- countries: Our World in Data / Ember, life-cycle factors, the latest year
  per country (``intensity_countries.csv``);
- cloud regions: Google's own yearly figures for Google Cloud (direct from
  2021, life-cycle for 2019–2020), Cloud Carbon Footprint's for AWS and Azure
  (direct) (``intensity_cloud_regions.csv``);
- grid zones: the yearly mean of Electricity Maps' hourly data, direct or
  life-cycle (``intensity_zones.csv``).

Unknown names raise :class:`~greenml.errors.ConfigError` with the closest
known names.

Lazy imports: rapidfuzz (~50 ms) is imported inside the functions that use it, so
importing this module stays cheap.
"""

from __future__ import annotations

import csv
import functools
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

from greenml.accounting.intensity import ConstantSource, IntensityProvenance, Scope, gap_note
from greenml.data import packaged
from greenml.errors import ConfigError

PROVIDERS = {"gcp": "gcp", "google": "gcp", "aws": "aws", "amazon": "aws", "azure": "azure"}


@dataclass(frozen=True)
class _Row:
    """One yearly figure and its provenance, keyed by the normalized names."""

    keys: tuple[str, ...]
    label: str
    g_per_kwh: float
    provenance: IntensityProvenance


def _read(name: str) -> list[dict[str, str]]:
    text = packaged(name).read_text(encoding="utf-8")
    return list(csv.DictReader(text.splitlines()))


def _norm(name: str) -> str:
    """Case-, accent-, apostrophe- and space-insensitive form of a name."""
    text = unicodedata.normalize("NFKD", name.strip().casefold().replace("\u2019", "'"))
    return " ".join("".join(c for c in text if not unicodedata.combining(c)).split())


def _year(text: str) -> int | None:
    return int(text) if text else None


@functools.cache
def _countries() -> dict[str, _Row]:
    table: dict[str, _Row] = {}
    for r in _read("intensity_countries.csv"):
        names = _country_names(r)
        prov = IntensityProvenance(r["source"], r["alpha2"], "yearly", "average",
                                   cast(Scope, r["scope"]), _year(r["year"]))  # fmt: skip
        row = _Row(tuple(_norm(n) for n in names), r["name"], float(r["g_per_kwh"]), prov)
        for key in row.keys:
            table.setdefault(key, row)
    return table


@functools.cache
def _regions() -> dict[str, list[_Row]]:
    table: dict[str, list[_Row]] = {}
    for r in _read("intensity_cloud_regions.csv"):
        location = f"{r['provider']}:{r['region']}"
        source = r["source"] if r["name"] == r["region"] else f"{r['source']}, {r['name']}"
        prov = IntensityProvenance(source, location, "yearly", "average",
                                   cast(Scope, r["scope"]), _year(r["year"]))  # fmt: skip
        row = _Row((r["region"], location), location, float(r["g_per_kwh"]), prov)
        table.setdefault(r["region"], []).append(row)
    return table


@functools.cache
def _zones() -> dict[str, list[dict[str, str]]]:
    table: dict[str, list[dict[str, str]]] = {}
    for r in _read("intensity_zones.csv"):
        for key in filter(None, (r["zone"], r["alias"])):
            table.setdefault(key.upper(), []).append(r)
    return table


def known_countries() -> list[str]:
    """Every accepted country code and name (alpha-2, alpha-3, English names)."""
    return sorted({n for r in _read("intensity_countries.csv") for n in _country_names(r)})


def known_cloud_regions() -> list[str]:
    """Every cloud region, as ``provider:region``."""
    return sorted({row.label for rows in _regions().values() for row in rows})


def known_zones() -> list[str]:
    """Every grid zone id (Electricity Maps ids and the file names' aliases)."""
    return sorted(_zones())


def country_source(country: str, *, year: int | None = None) -> ConstantSource:
    """The yearly intensity of a country.

    Args:
        country: ISO 3166 alpha-2 (``FR``) or alpha-3 (``FRA``) code, or an
            English name (``France``); case-insensitive.
        year: The data year; the one packaged by default (one year per country).

    Raises:
        ConfigError: Unknown country (the message lists the closest names), or
            no figure for that year.
    """
    row = _countries().get(_norm(country))
    if row is None:
        # Suggest codes for a code-like query, names otherwise; one entry per country.
        short = len(country.strip()) <= 3
        names = {n: f"{r.label} ({r.provenance.location})" for n, r in _named_countries()
                 if (len(n) <= 3) == short}  # fmt: skip
        near = [names[n] for n in closest(country, names, limit=15)]
        raise ConfigError(_unknown("country", country, list(dict.fromkeys(near))[:5], False))
    _check_year(country, year, [row])
    return ConstantSource(row.g_per_kwh, row.provenance)


def _check_year(name: str, year: int | None, rows: list[_Row]) -> _Row:
    """The row of ``year`` (the newest when None); a missing year names those there are."""
    dated = sorted(rows, key=lambda r: r.provenance.year or 0)
    if year is None:
        return dated[-1]
    match = [r for r in dated if r.provenance.year == year]
    if not match:
        years = [r.provenance.year for r in dated if r.provenance.year] or "none (undated)"
        raise ConfigError(f"no {name} figure for {year}; years available: {years}")
    return match[0]


def cloud_region_source(region: str, *, year: int | None = None) -> ConstantSource:
    """The yearly intensity of a cloud region.

    Args:
        region: A Google Cloud, AWS or Azure region (``us-central1``,
            ``eu-west-1``, ``westeurope`` or ``West Europe``), optionally
            prefixed with its provider (``gcp:``, ``aws:``, ``azure:``).
        year: The data year (Google Cloud: 2019 onwards); the newest by default.

    Raises:
        ConfigError: Unknown or ambiguous region, unknown provider, or no
            figure for that year.
    """
    provider, _, name = region.rpartition(":")
    key = name.strip().lower().replace(" ", "")
    rows = _regions().get(key, [])
    if provider:
        if provider.strip().lower() not in PROVIDERS:
            raise ConfigError(
                f"unknown cloud provider {provider!r} in {region!r}; use gcp:, aws: or azure:"
            )
        wanted = PROVIDERS[provider.strip().lower()]
        rows = [r for r in rows if r.label.startswith(wanted + ":")]
    if not rows:
        raise ConfigError(_unknown("cloud region", region, known_cloud_regions()))
    labels = list(dict.fromkeys(r.label for r in rows))
    if len(labels) > 1:
        raise ConfigError(
            f"cloud region {region!r} exists at several providers: write {' or '.join(labels)}"
        )
    row = _check_year(labels[0], year, rows)
    return ConstantSource(row.g_per_kwh, row.provenance)


def zone_source(
    zone: str, *, year: int | None = None, scope: Scope = "lifecycle"
) -> ConstantSource:
    """The yearly mean intensity of an Electricity Maps zone.

    Args:
        zone: Zone id such as ``DE``, ``DE-LU``, ``GB`` or ``US-CAL-CISO``
            (case-insensitive).
        year: The data year; the newest available by default.
        scope: ``lifecycle`` (Electricity Maps' default) or ``direct``.

    Raises:
        ConfigError: Unknown zone, or no data for that year.
    """
    rows = _zones().get(zone.strip().upper())
    if not rows:
        raise ConfigError(_unknown_zone(zone))
    years = sorted(int(r["year"]) for r in rows)
    chosen = max(years) if year is None else year
    match = [r for r in rows if int(r["year"]) == chosen]
    if not match:
        raise ConfigError(f"no {zone} figure for {chosen}; years available: {years}")
    r = match[0]
    value = float(r["lifecycle_g_per_kwh" if scope == "lifecycle" else "direct_g_per_kwh"])
    source = f"{r['source']}; {gap_note(int(r['estimated_hours']), int(r['hours']))}"
    return ConstantSource(
        value, IntensityProvenance(source, r["zone"], "yearly", "average", scope, chosen)
    )


def closest(query: str, choices: Iterable[str], limit: int = 5) -> list[str]:
    """Up to ``limit`` distinct choices nearest to ``query`` (rapidfuzz edit-distance ratio)."""
    from rapidfuzz import fuzz, process, utils

    found = process.extract(
        query, list(dict.fromkeys(choices)), scorer=fuzz.ratio,
        processor=utils.default_process, limit=limit,
    )  # fmt: skip
    return [name for name, _score, _index in found]


def _unknown(what: str, query: str, choices: list[str], rank: bool = True) -> str:
    near = closest(query, choices) if rank else choices
    hint = f"; closest known: {', '.join(near)}" if near else ""
    return f"unknown {what} {query!r}{hint}"


def _unknown_zone(zone: str) -> str:
    """Why a zone is unknown: a country code that is not packaged as a zone (``FR``) points
    to ``--country`` and says what resolution that gives; a near miss gets the closest zones
    (and the country's yearly mean where the zone names a country, ``US-CAL-CIS``)."""
    text = zone.strip().upper()
    code = text.split("-")[0]
    row = _countries().get(_norm(code)) if len(code) in (2, 3) else None
    if row is None:
        return _unknown("grid zone", zone, known_zones())
    prov = row.provenance
    year = f" {prov.year}" if prov.year else ""
    country = (
        f"--country {prov.location} gives {row.label}'s country-level yearly mean{year} "
        f"({row.g_per_kwh:g} gCO2eq/kWh, {prov.source}): one value for the whole country "
        "and year, no hourly or regional variation"
    )
    zones = sorted({r["zone"] for r in _read("intensity_zones.csv")})
    if text == code and not any(z.startswith(f"{code}-") for z in zones):
        return (
            f"{text!r} is not among the {len(zones)} packaged grid zones (hourly Electricity "
            f"Maps data: {', '.join(zones)}); {country}"
        )
    return f"{_unknown('grid zone', zone, known_zones())}; or {country}"


def _named_countries() -> list[tuple[str, _Row]]:
    """(name as written, its row) for every accepted country code and name."""
    table = _countries()
    rows = _read("intensity_countries.csv")
    return [(n, table[_norm(n)]) for r in rows for n in _country_names(r)]


def _country_names(r: dict[str, str]) -> list[str]:
    return [r["alpha2"], r["alpha3"], r["name"], *filter(None, r["other_names"].split(";"))]


def alpha3_of(alpha2: str) -> str | None:
    """The ISO 3166 alpha-3 code of a packaged country's alpha-2 code (``FR`` → ``FRA``)."""
    key = alpha2.strip().upper()
    return next((r["alpha3"] for r in _read("intensity_countries.csv") if r["alpha2"] == key), None)


def cloud_region_place(region: str) -> str | None:
    """Where a packaged cloud region is, as published (``Iowa``, ``Belgium``); None if unknown."""
    provider, _, name = region.strip().lower().rpartition(":")
    for r in _read("intensity_cloud_regions.csv"):
        if r["region"].lower() == name and provider in ("", r["provider"]):
            return r["location"]
    return None


def country_code(country: str) -> str | None:
    """The ISO 3166 alpha-2 code of a packaged country (code or name); None if unknown."""
    row = _countries().get(_norm(country))
    return None if row is None else row.provenance.location

"""Market-based carbon (GHG Protocol Scope 2 dual reporting), kept apart from location-based.

The location-based figure (``carbon``) stays as it is. The market-based figure
(``carbon_market``) prices the same facility energy by the contracts behind it,
taking for each share of the energy the first of (Scope 2 Guidance, 2015,
table 6.3, simplified):

1. **certificates** the user declares (RECs, GOs, PPAs), each covering a share
   of the energy or a number of kWh, with its vintage: 0 gCO2eq/kWh;
2. for the rest, the **supplier-specific** emission factor the user declares;
3. else the **provider's carbon-free-energy share** of the cloud region, where
   published (Google's hourly-matched CFE % per region and year): that share at
   0, the remainder at the location-based grid factor;
4. else a **residual-mix** factor: none is packaged (no published residual-mix
   table is among the data greenml ships), so the remainder falls back to the
   **location-based** factor, and the block says so.

Offsets are listed apart, never subtracted: Scope 2 counts electricity, and an
offset is not an instrument for it. Bad declarations (negative or above 100 %
shares, certificates covering more energy than was used) raise
:class:`~greenml.errors.ConfigError`.
"""

from __future__ import annotations

import csv
import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from greenml.data import packaged
from greenml.errors import ConfigError

SCOPE = "scope 2, market-based (GHG Protocol Scope 2 Guidance, 2015)"
NO_RESIDUAL_MIX = (
    "no residual-mix factor is packaged: the uncovered energy is priced at the "
    "location-based factor (labelled fallback)"
)
OFFSETS_NOTE = "listed apart, never subtracted from scope 2"
_CERT = re.compile(
    r"^\s*(?P<amount>[-+0-9.eE]+)\s*(?P<unit>%|kwh|mwh)?\s*(?:@\s*(?P<vintage>\d{4}))?"
    r"\s*(?::\s*(?P<kind>\S.*?))?\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Certificate:
    """Energy attribute certificates (or a PPA) covering a share or an amount of the energy.

    Attributes:
        share: Fraction of the run's energy covered, in [0, 1]; or ``None``.
        kwh: kWh covered; or ``None`` (exactly one of ``share`` and ``kwh``).
        vintage: The year the certified energy was generated.
        kind: ``REC``, ``GO``, ``PPA`` … as the user names it.
    """

    share: float | None = None
    kwh: float | None = None
    vintage: int | None = None
    kind: str = "certificate"

    def covered_kwh(self, energy_kwh: float) -> float:
        return self.kwh if self.kwh is not None else (self.share or 0.0) * energy_kwh

    def to_dict(self, energy_kwh: float) -> dict[str, Any]:
        return {"kind": self.kind, "vintage": self.vintage, "share": self.share,
                "kwh": self.kwh, "covered_kwh": self.covered_kwh(energy_kwh)}  # fmt: skip


@dataclass(frozen=True)
class Offset:
    """A carbon offset the user holds: reported, never subtracted."""

    kg: float
    kind: str = "offset"
    vintage: int | None = None


@dataclass(frozen=True)
class MarketDeclaration:
    """What the user declares about the electricity's contracts (all optional)."""

    supplier_g_per_kwh: float | None = None
    supplier_source: str = "supplier-specific factor declared by the user"
    certificates: tuple[Certificate, ...] = ()
    offsets: tuple[Offset, ...] = field(default_factory=tuple)

    def any_given(self) -> bool:
        return bool(self.supplier_g_per_kwh is not None or self.certificates or self.offsets)


@dataclass(frozen=True)
class ProviderCfe:
    """A provider's published carbon-free-energy share of one region and year."""

    provider: str
    region: str
    year: int
    share: float
    source: str


def parse_certificate(text: str) -> Certificate:
    """``--certificates``: ``40%@2024:GO``, ``0.4``, ``1200kWh@2025:PPA`` or ``3MWh``.

    Raises:
        ConfigError: Not of that form, a negative amount, or a share above 100 %.
    """
    found = _CERT.match(text)
    if not found:
        raise ConfigError(
            f"--certificates {text!r}: give SHARE[@VINTAGE][:KIND] (40%@2024:GO) "
            "or KWH (1200kWh@2025:PPA)"
        )
    try:
        amount = float(found["amount"])
    except ValueError:
        raise ConfigError(f"--certificates {text!r}: {found['amount']!r} is not a number") from None
    unit = (found["unit"] or "").lower()
    vintage = int(found["vintage"]) if found["vintage"] else None
    kind = found["kind"] or "certificate"
    if unit in ("kwh", "mwh"):
        return certificate(kwh=amount * (1000.0 if unit == "mwh" else 1.0), vintage=vintage,
                           kind=kind, what=f"--certificates {text!r}")  # fmt: skip
    share = amount / 100.0 if unit == "%" or amount > 1 else amount
    return certificate(share=share, vintage=vintage, kind=kind, what=f"--certificates {text!r}")


def certificate(
    *,
    share: float | None = None,
    kwh: float | None = None,
    vintage: int | None = None,
    kind: str = "certificate",
    what: str = "a certificate",
) -> Certificate:
    """A checked :class:`Certificate`.

    Raises:
        ConfigError: Neither or both of share and kWh, a share outside [0, 100 %],
            a negative or non-finite amount, or a vintage outside 1990–2100.
    """
    if (share is None) == (kwh is None):
        raise ConfigError(f"{what}: give a share (percent) or kWh, exactly one")
    amount = share if share is not None else kwh
    if isinstance(amount, bool) or not isinstance(amount, (int, float)):
        raise ConfigError(f"{what}: the amount must be a number")
    if not math.isfinite(amount) or amount < 0:
        raise ConfigError(f"{what}: the amount must be a number ≥ 0, got {amount}")
    if share is not None and share > 1:
        raise ConfigError(f"{what}: a share cannot exceed 100 %, got {share:.4g} (×100 %)")
    if vintage is not None and not 1990 <= vintage <= 2100:
        raise ConfigError(f"{what}: vintage {vintage} is not a plausible year")
    return Certificate(share, kwh, vintage, kind.strip() or "certificate")


def check_supplier(value: float | None) -> float | None:
    """A supplier-specific factor: a finite gCO2eq/kWh ≥ 0 and below 2000.

    Raises:
        ConfigError: Negative, non-finite or beyond any real grid (2000 g/kWh).
    """
    if value is None:
        return None
    if isinstance(value, bool) or not math.isfinite(value) or not 0 <= value <= 2000:
        raise ConfigError(f"--supplier-ci must be between 0 and 2000 gCO2eq/kWh, got {value}")
    return float(value)


def declaration(
    supplier_ci: float | None = None,
    certificates: Sequence[str] = (),
    market_file: str | Path | None = None,
) -> MarketDeclaration | None:
    """The user's declaration from the options and an optional TOML file; None if nothing.

    The file holds a ``[market]`` table: ``supplier_g_per_kwh``, ``supplier_source``,
    ``[[market.certificates]]`` (``share_pct`` or ``kwh``, ``vintage``, ``kind``) and
    ``[[market.offsets]]`` (``kg``, ``kind``, ``vintage``). Options add to the file.

    Raises:
        ConfigError: A bad value anywhere, certificate shares summing above 100 %.
    """
    table = read_market_file(market_file) if market_file is not None else {}
    where = f"market file {market_file}"
    supplier = supplier_ci
    if supplier is None:
        supplier = _number(table, "supplier_g_per_kwh", where)
    certs = [_certificate_of(c, f"{where}: certificates[{i}]")
             for i, c in enumerate(_tables(table, "certificates", where))]  # fmt: skip
    certs += [parse_certificate(text) for text in certificates]
    offsets = [_offset_of(o, f"{where}: offsets[{i}]")
               for i, o in enumerate(_tables(table, "offsets", where))]  # fmt: skip
    total = sum(c.share or 0.0 for c in certs)
    if total > 1 + 1e-9:
        raise ConfigError(f"certificates cover {total:.1%} of the energy: at most 100 %")
    source = table.get("supplier_source", MarketDeclaration.supplier_source)
    if not isinstance(source, str):
        raise ConfigError(f"{where}: supplier_source must be text")
    out = MarketDeclaration(check_supplier(supplier), source, tuple(certs), tuple(offsets))
    return out if out.any_given() else None


def read_market_file(path: str | Path) -> dict[str, Any]:
    """The ``[market]`` table of a TOML file.

    Raises:
        ConfigError: Missing, unreadable, not TOML, or no ``[market]`` table.
    """
    from greenml.config.toml_file import read_toml

    data = read_toml(path, "market file")
    market = data.get("market")
    if not isinstance(market, dict):
        raise ConfigError(f"market file {path}: no [market] table")
    return market


def provider_cfe(region: str | None, year: int | None = None) -> ProviderCfe | None:
    """The published CFE share of a cloud region (``us-central1``, ``gcp:us-central1``).

    The year is the run's where published, else the latest published (the
    source names the year used). ``None``: the provider publishes none for it.
    """
    if not region:
        return None
    provider, _, name = region.strip().lower().rpartition(":")
    rows = [r for r in _cfe_rows() if r.region == name and provider in ("", r.provider)]
    if not rows:
        return None
    exact = [r for r in rows if r.year == year]
    return exact[0] if exact else max(rows, key=lambda r: r.year)


@functools.cache
def _cfe_rows() -> tuple[ProviderCfe, ...]:
    text = packaged("provider_cfe.csv").read_text(encoding="utf-8")
    return tuple(
        ProviderCfe(
            r["provider"], r["region"], int(r["year"]), float(r["cfe_pct"]) / 100, r["source"]
        )
        for r in csv.DictReader(text.splitlines())
    )


def market_block(
    *,
    energy_kwh: float,
    location_kg: float | None,
    location_source: str,
    location_uncertainty_rel: float | None,
    declared: MarketDeclaration | None,
    cfe: ProviderCfe | None,
) -> dict[str, Any]:
    """The ``carbon_market`` block of a run or an estimate.

    Args:
        energy_kwh: Facility energy (what the location-based figure priced).
        location_kg: The location-based emissions (``None``: not known).
        location_source: Where the location-based factor came from.
        location_uncertainty_rel: Its relative uncertainty.
        declared: What the user declares (None: nothing).
        cfe: The provider's CFE share of the region, if published.

    Raises:
        ConfigError: Certificates covering more energy than was used.
    """
    declared = declared or MarketDeclaration()
    covered = sum(c.covered_kwh(energy_kwh) for c in declared.certificates)
    if covered > energy_kwh * (1 + 1e-9) + 1e-12:
        raise ConfigError(
            f"certificates cover {covered:.6g} kWh but the energy used is {energy_kwh:.6g} kWh"
        )
    parts: list[dict[str, Any]] = []
    if covered > 0:
        claim = "energy attribute certificates declared by the user (zero-emission claim)"
        parts.append(_part("certificates", covered, 0.0, claim, 0.0))
    rest = max(energy_kwh - covered, 0.0)
    loc_g = None if location_kg is None or energy_kwh <= 0 else location_kg * 1000 / energy_kwh
    loc_rel = location_uncertainty_rel or 0.0
    notes: list[str] = []
    if declared.supplier_g_per_kwh is not None:
        parts.append(_part("supplier", rest, declared.supplier_g_per_kwh,
                           declared.supplier_source, 0.0))  # fmt: skip
    elif cfe is not None and loc_g is not None:
        cfe_src = f"{cfe.source}: {cfe.share:.0%} carbon-free in {cfe.region}, {cfe.year}"
        parts.append(_part("provider-cfe", rest * cfe.share, 0.0, cfe_src, 0.0))
        remainder = f"the non-CFE remainder at the location-based factor ({location_source})"
        parts.append(_part("location-fallback", rest * (1 - cfe.share), loc_g, remainder, loc_rel))
    elif loc_g is not None:
        parts.append(_part("location-fallback", rest, loc_g,
                           f"location-based factor ({location_source})", loc_rel))  # fmt: skip
        notes.append(NO_RESIDUAL_MIX)
    elif rest > 0:
        return {"kg": None, "status": "unknown", "scope": SCOPE,
                "hint": "no location-based factor to fall back to and no supplier factor "
                        "declared: pass --supplier-ci or a location",
                **_offsets(declared)}  # fmt: skip
    parts = [p for p in parts if p["kwh"] > 0] or parts[:1]
    kg = sum(p["kg"] for p in parts)
    spread = math.hypot(*(p["kg"] * p["uncertainty_rel"] for p in parts))
    basis = "+".join(dict.fromkeys(p["basis"] for p in parts)) or "certificates"
    block: dict[str, Any] = {
        "status": "ok", "kg": kg, "scope": SCOPE, "basis": basis,
        "intensity_g_per_kwh": kg * 1000 / energy_kwh if energy_kwh > 0 else None,
        "energy_kwh": energy_kwh, "method": "market-based",
        "uncertainty_rel": spread / kg if kg > 0 else 0.0, "parts": parts,
        "certificates": [c.to_dict(energy_kwh) for c in declared.certificates],
    }  # fmt: skip
    block.update(_offsets(declared))
    if notes:
        block["notes"] = notes
    return block


def market_block_from_carbon(
    carbon: Mapping[str, Any], declared: MarketDeclaration | None, region: str | None, year: int
) -> dict[str, Any]:
    """The market-based block beside a run's location-based ``carbon`` block."""
    if carbon.get("status") not in (None, "ok") or carbon.get("kg") is None:
        if declared is not None and declared.supplier_g_per_kwh is not None:
            reason = "the run's facility energy is not known to the carbon block"
        else:
            reason = "no location-based figure to fall back to: " + str(
                carbon.get("reason") or carbon.get("hint") or "carbon unknown"
            )
        return {"kg": None, "status": "unknown", "scope": SCOPE, "hint": reason}
    kwh = carbon.get("facility_energy_kwh")
    if kwh is None:
        kwh = carbon["kg"] * 1000 / carbon["intensity_g_per_kwh"]
    return market_block(
        energy_kwh=float(kwh), location_kg=float(carbon["kg"]),
        location_source=str(carbon.get("source") or "location-based"),
        location_uncertainty_rel=carbon.get("uncertainty_rel"),
        declared=declared, cfe=provider_cfe(region, year),
    )  # fmt: skip


def _part(basis: str, kwh: float, g_per_kwh: float, source: str, rel: float) -> dict[str, Any]:
    return {"basis": basis, "kwh": kwh, "g_per_kwh": g_per_kwh, "kg": kwh * g_per_kwh / 1000,
            "source": source, "uncertainty_rel": rel}  # fmt: skip


def _offsets(declared: MarketDeclaration) -> dict[str, Any]:
    if not declared.offsets:
        return {}
    return {
        "offsets": [{"kg": o.kg, "kind": o.kind, "vintage": o.vintage} for o in declared.offsets],
        "offsets_kg": sum(o.kg for o in declared.offsets),
        "offsets_note": OFFSETS_NOTE,
    }


def _number(table: Mapping[str, Any], key: str, where: str) -> float | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: {key} must be a number")
    return float(value)


def _tables(table: Mapping[str, Any], key: str, where: str) -> list[Mapping[str, Any]]:
    items = table.get(key, [])
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise ConfigError(f"{where}: {key} must be an array of tables ([[market.{key}]])")
    return items


def _certificate_of(item: Mapping[str, Any], where: str) -> Certificate:
    share = _number(item, "share_pct", where)
    vintage = item.get("vintage")
    if vintage is not None and (isinstance(vintage, bool) or not isinstance(vintage, int)):
        raise ConfigError(f"{where}: vintage must be a year")
    kind = item.get("kind", "certificate")
    if not isinstance(kind, str):
        raise ConfigError(f"{where}: kind must be text")
    return certificate(
        share=None if share is None else share / 100, kwh=_number(item, "kwh", where),
        vintage=vintage, kind=kind, what=where,
    )  # fmt: skip


def _offset_of(item: Mapping[str, Any], where: str) -> Offset:
    kg = _number(item, "kg", where)
    if kg is None or not math.isfinite(kg) or kg < 0:
        raise ConfigError(f"{where}: kg must be a number ≥ 0")
    vintage = item.get("vintage")
    if vintage is not None and (isinstance(vintage, bool) or not isinstance(vintage, int)):
        raise ConfigError(f"{where}: vintage must be a year")
    kind = item.get("kind", "offset")
    return Offset(kg, kind if isinstance(kind, str) else "offset", vintage)

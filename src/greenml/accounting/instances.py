"""Cloud instance prices per hour: a user table first, then the packaged list prices.

Tables are CSV with the columns
``provider,instance_type,region,on_demand_usd_per_h,spot_usd_per_h,source,date``
and, optionally, ``spot_source,spot_date`` (where and when the spot price was seen,
when not the on-demand price's); a price may be blank. The packaged
``greenml/data/instance_prices.csv`` holds list prices at a given date (see
``data/SOURCES.md``); spot prices move by the hour, so give your own in a table when you
need them right — or a provider's export (:mod:`greenml.accounting.price_export`:
AWS ``describe-spot-price-history`` JSON, averaged per instance type and region).
"""

from __future__ import annotations

import csv
import difflib
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from greenml.data import packaged
from greenml.errors import ConfigError

COLUMNS = (
    "provider", "instance_type", "region", "on_demand_usd_per_h", "spot_usd_per_h",
    "source", "date",
)  # fmt: skip
PACKAGED = "instance_prices.csv"


@dataclass(frozen=True)
class InstancePrice:
    """The hourly price of one instance type, as a table lists it.

    Attributes:
        provider: ``aws``, ``gcp``, ``azure`` … (lower case).
        instance_type: As the provider spells it.
        region: The region the price applies to.
        on_demand_usd_per_h: On-demand price, ``None`` when not listed.
        spot_usd_per_h: Spot / preemptible price, ``None`` when not listed.
        source: Where the price comes from.
        date: When it was listed.
        spot: Whether the spot price is the one used.
        table: The table it was read from (a path, or ``packaged``).
    """

    provider: str
    instance_type: str
    region: str
    on_demand_usd_per_h: float | None
    spot_usd_per_h: float | None
    source: str
    date: str
    spot: bool = False
    table: str = "packaged"
    spot_source: str = ""
    spot_date: str = ""

    @property
    def usd_per_h(self) -> float:
        """The price in use (spot or on-demand)."""
        price = self.spot_usd_per_h if self.spot else self.on_demand_usd_per_h
        if price is None:  # instance_price() never returns such a price
            raise ConfigError(f"no {self.pricing} price for {self.instance_type}")
        return price

    @property
    def pricing(self) -> str:
        return "spot" if self.spot else "on-demand"

    def cost_usd(self, duration_s: float) -> float:
        """Hours × price per hour (billing granularity and minimums not modelled)."""
        return max(duration_s, 0.0) / 3600.0 * self.usd_per_h

    def to_dict(self, duration_s: float) -> dict[str, Any]:
        """The ``instance`` part of a run record's ``cost`` block; a spot run adds what spot
        saved against the on-demand price of the same table row (realized, per its hours)."""
        out = self._list_dict(duration_s)
        if self.spot and self.on_demand_usd_per_h and self.spot_usd_per_h is not None:
            hours = max(duration_s, 0.0) / 3600.0
            saved = hours * (self.on_demand_usd_per_h - self.spot_usd_per_h)
            out["on_demand_usd_per_h"] = self.on_demand_usd_per_h
            out["spot_saving_usd"] = saved
            out["spot_saving_rel"] = 1.0 - self.spot_usd_per_h / self.on_demand_usd_per_h
            out["spot_source"] = self.spot_source or self.source
            out["spot_date"] = self.spot_date or self.date
        return out

    def _list_dict(self, duration_s: float) -> dict[str, Any]:
        return {
            "usd": self.cost_usd(duration_s),
            "hours": duration_s / 3600.0,
            "usd_per_h": self.usd_per_h,
            "pricing": self.pricing,
            "provider": self.provider,
            "instance_type": self.instance_type,
            "region": self.region,
            "source": self.source,
            "date": self.date,
            "table": self.table,
            "method": "hours × list price per hour",
        }


def instance_price(
    instance_type: str,
    provider: str | None = None,
    spot: bool = False,
    table: str | Path | None = None,
    region: str | None = None,
) -> InstancePrice:
    """The hourly price of an instance type.

    Args:
        instance_type: e.g. ``p4d.24xlarge``, ``a2-highgpu-1g``,
            ``Standard_ND96asr_v4`` (case and Azure's ``Standard_`` prefix do
            not matter); ``provider:type`` also works.
        provider: Restrict to one provider.
        spot: Use the spot price.
        table: A user CSV table, searched before the packaged one.
        region: Prefer this region when a table lists several.

    Raises:
        ConfigError: Unknown instance, ambiguous between providers, no spot
            price, or a malformed table.
    """
    if provider is None and ":" in instance_type:
        provider, instance_type = instance_type.split(":", 1)
    want = _key(instance_type)
    prov = provider.lower().strip() if provider else None
    tables = ([_load(Path(table), str(table))] if table is not None else []) + [_packaged()]
    for rows in tables:
        found = [r for r in rows if _key(r.instance_type) == want]
        found = [r for r in found if prov is None or r.provider == prov]
        if not found:
            continue
        providers = sorted({r.provider for r in found})
        if len(providers) > 1:
            raise ConfigError(
                f"instance {instance_type!r} is listed for {', '.join(providers)}: "
                "give the provider (provider:type)"
            )
        if region is not None:
            found = [r for r in found if r.region == region] or found
        chosen = replace(found[0], spot=spot)
        if spot and chosen.spot_usd_per_h is None:
            raise ConfigError(
                f"no spot price for {chosen.instance_type} in {chosen.table}: spot prices "
                "change by the hour; give one in a table (--instance-prices CSV)"
            )
        if not spot and chosen.on_demand_usd_per_h is None:
            raise ConfigError(f"no on-demand price for {chosen.instance_type} in {chosen.table}")
        return chosen
    known = [r.instance_type for rows in tables for r in rows]
    close = difflib.get_close_matches(instance_type, known, n=3)
    hint = (
        f"; did you mean {', '.join(close)}?"
        if close
        else "; give it in a table (--instance-prices CSV)"
    )
    where = f" for {prov}" if prov else ""
    raise ConfigError(f"no price for instance {instance_type!r}{where}{hint}")


def load_table(path: str | Path) -> list[InstancePrice]:
    """Read an instance price table (the packaged format, or a provider's export)."""
    return _load(Path(path), str(path))


_PACKAGED_ROWS: list[InstancePrice] | None = None


def _packaged() -> list[InstancePrice]:
    global _PACKAGED_ROWS
    if _PACKAGED_ROWS is None:
        _PACKAGED_ROWS = _load(packaged(PACKAGED), "packaged")
    return _PACKAGED_ROWS


def _aws_on_demand(instance_type: str) -> tuple[float | None, str, str] | None:
    """The packaged on-demand price, source and date of an AWS instance type."""
    for row in _packaged():
        if row.provider == "aws" and _key(row.instance_type) == _key(instance_type):
            return row.on_demand_usd_per_h, row.source, row.date
    return None


def _load(path: Path, label: str) -> list[InstancePrice]:
    if path.suffix.lower() == ".json":
        from greenml.accounting.price_export import load_export

        return [InstancePrice(**fields) for fields in load_export(path, _aws_on_demand)]
    rows: list[InstancePrice] = []
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise ConfigError(f"{path}:1: missing columns {', '.join(missing)}")
            for row in reader:
                where = f"{path}:{reader.line_num}"
                if not (row.get("instance_type") or "").strip():
                    continue
                rows.append(
                    InstancePrice(
                        provider=(row["provider"] or "").strip().lower(),
                        instance_type=row["instance_type"].strip(),
                        region=(row["region"] or "").strip(),
                        on_demand_usd_per_h=_price(row["on_demand_usd_per_h"], where),
                        spot_usd_per_h=_price(row["spot_usd_per_h"], where),
                        source=(row["source"] or "").strip(),
                        date=(row["date"] or "").strip(),
                        table=label,
                        spot_source=(row.get("spot_source") or "").strip(),
                        spot_date=(row.get("spot_date") or "").strip(),
                    )
                )
    except OSError as exc:
        raise ConfigError(f"cannot read instance price table {path}: {exc.strerror}") from exc
    return rows


def _price(text: str | None, where: str) -> float | None:
    if text is None or not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{where}: malformed price {text!r} (USD per hour expected)") from None
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{where}: malformed price {text!r} (USD per hour expected)")
    return value


def _key(instance_type: str) -> str:
    key = instance_type.strip().lower()
    return key.removeprefix("standard_")

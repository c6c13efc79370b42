"""A provider's price export as an instance price table: AWS spot price history, averaged.

The format is what ``aws ec2 describe-spot-price-history --output json`` prints::

    {"SpotPriceHistory": [
      {"AvailabilityZone": "us-east-1a", "InstanceType": "g6e.xlarge",
       "ProductDescription": "Linux/UNIX", "SpotPrice": "0.794500",
       "Timestamp": "2026-11-20T10:02:11+00:00"}, ...]}

Prices are averaged per instance type and region (the zone less its letter) over every
zone and time in the file, as listed (not weighted by how long each price held); the
row's on-demand price is the packaged table's for the same type, when it has one. Each
spot price says its source (the file, how many prices, which zones) and its date (the
first and last time in the file).
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from greenml.errors import ConfigError

OnDemand = Callable[[str], "tuple[float | None, str, str] | None"]

_ZONE = re.compile(r"^([a-z]{2}(?:-[a-z]+)+-\d+)[a-z]$")


def parse_export(data: Any, label: str) -> list[tuple[str, str, float, int, str, str, str]]:
    """``(instance type, region, mean spot USD/h, prices, zones, first, last)`` per pair.

    Raises:
        ConfigError: Not a spot price history, or a malformed price (one line).
    """
    items = data.get("SpotPriceHistory") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise ConfigError(f"{label}: not an AWS spot price history (no SpotPriceHistory list)")
    groups: dict[tuple[str, str], list[tuple[float, str, str]]] = defaultdict(list)
    for n, item in enumerate(items):
        where = f"{label}: SpotPriceHistory[{n}]"
        if not isinstance(item, dict):
            raise ConfigError(f"{where} is not an object")
        kind, zone, price, when = (item.get(k) for k in
                                   ("InstanceType", "AvailabilityZone", "SpotPrice", "Timestamp"))
        if not isinstance(kind, str) or not kind.strip():
            raise ConfigError(f"{where}: InstanceType missing")
        found = _ZONE.match(zone) if isinstance(zone, str) else None
        if found is None:
            raise ConfigError(f"{where}: AvailabilityZone {zone!r} is not a zone like us-east-1a")
        try:
            value = float(price) if isinstance(price, (str, int, float)) else math.nan
        except ValueError:
            value = math.nan
        if isinstance(price, bool) or not math.isfinite(value) or value < 0:
            raise ConfigError(f"{where}: SpotPrice {price!r} is not a price in USD per hour")
        try:
            stamp = datetime.fromisoformat(str(when).replace("Z", "+00:00")).date().isoformat()
        except ValueError:
            raise ConfigError(f"{where}: Timestamp {when!r} is not an ISO 8601 time") from None
        groups[(kind.strip(), found.group(1))].append((value, str(zone), stamp))
    out = []
    for (kind, region), seen in sorted(groups.items()):
        zones = ",".join(sorted({z for _, z, _ in seen}))
        dates = sorted(d for _, _, d in seen)
        mean = sum(v for v, _, _ in seen) / len(seen)
        out.append((kind, region, mean, len(seen), zones, dates[0], dates[-1]))
    return out


def load_export(path: Path, on_demand: OnDemand) -> list[dict[str, Any]]:
    """The export at ``path`` as the fields of table rows (``InstancePrice`` keywords).

    ``on_demand(instance_type)`` gives the packaged on-demand price, source and date of
    a type (``None``: not listed).

    Raises:
        ConfigError: Unreadable, not JSON, or not a spot price history.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read price export {path}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"price export {path} is not JSON: {exc}") from None
    rows = []
    for kind, region, mean, count, zones, first, last in parse_export(data, str(path)):
        listed = on_demand(kind)
        rows.append({
            "provider": "aws", "instance_type": kind, "region": region,
            "on_demand_usd_per_h": listed[0] if listed else None,
            "spot_usd_per_h": mean,
            "source": f"{listed[1]} ({listed[2]}, packaged)" if listed else "",
            "date": listed[2] if listed else "",
            "table": str(path),
            "spot_source": (f"mean of {count} AWS spot price(s) in {path.name} "
                            f"(describe-spot-price-history; zones {zones})"),
            "spot_date": first if first == last else f"{first}/{last}",
        })  # fmt: skip
    return rows

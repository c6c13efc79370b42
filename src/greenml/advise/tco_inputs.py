"""Inputs of the buy-or-rent comparison: from flags, a TOML file, and cited defaults.

Each input is a :class:`Given` value with the place it came from (a flag, the
file, a packaged table, a cited default, or ``not counted``). Flags win over
the file; the file wins over defaults. Defaults exist only where a source
backs them (``data/SOURCES.md``); anything else is either required or counted
as zero and labelled so.

The TOML file holds one ``[tco]`` table whose keys are the flags' names with
underscores (``hardware_usd = 270000``, ``usage = 0.6``, ``gpu = "H100 SXM"``).
"""

from __future__ import annotations

import csv
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from greenml.data import packaged
from greenml.errors import ConfigError

ELECTRICITY_USD_PER_KWH = 0.0806
ELECTRICITY_SOURCE = (
    "U.S. EIA, average retail price to industrial customers, 2023: 8.06 ¢/kWh "
    "(EIA Electric Power Monthly, March 2024)"
)
DEFAULT_YEARS = 4.0  # greenml.hardware.embodied.DEFAULT_LIFETIME_YEARS, with its source

NUMBERS: dict[str, tuple[float, float | None, str]] = {
    # key: (lowest, highest or None, unit)
    "years": (0.0, 30.0, "years"),
    "count": (1.0, 100_000.0, "GPUs"),
    "hardware_usd": (0.0, None, "USD"),
    "residual_share": (0.0, 1.0, "share of the price"),
    "usage": (0.0, 1.0, "share of hours"),
    "power_w": (0.0, None, "W per GPU"),
    "idle_share": (0.0, 1.0, "share of TDP"),
    "pue": (1.0, 5.0, ""),
    "price": (0.0, None, "USD/kWh"),
    "staff_usd_per_year": (0.0, None, "USD/year"),
    "space_usd_per_year": (0.0, None, "USD/year"),
    "maintenance_usd_per_year": (0.0, None, "USD/year"),
    "on_demand_price": (0.0, None, "USD/h per instance"),
    "reserved_price": (0.0, None, "USD/h per instance"),
    "spot_price": (0.0, None, "USD/h per instance"),
    "checkpoint_cost_s": (0.0, None, "s"),
    "restart_cost_s": (0.0, None, "s"),
    "job_hours": (0.0, None, "h"),
    "embodied_kg": (0.0, None, "kg CO2eq per GPU"),
    "interruption_rate": (0.0, 100.0, "interruptions per hour"),
    "ci": (0.0, None, "gCO2eq/kWh"),
    "price_escalation": (-0.5, 1.0, "share per year"),
}
TEXTS = ("gpu", "instance", "zone", "region", "country")
KEYS = (*NUMBERS, *TEXTS)


@dataclass(frozen=True)
class Given:
    """One input and where it came from."""

    value: Any
    source: str


def check_number(key: str, value: Any, where: str) -> float:
    """``value`` as a float in the key's range; ConfigError naming ``where`` otherwise."""
    low, high, unit = NUMBERS[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: {key} must be a number, not {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ConfigError(f"{where}: {key} must be finite, not {value!r}")
    if key in ("years", "count", "job_hours") and number <= 0:
        raise ConfigError(f"{where}: {key} must be > 0, not {value!r}")
    if number < low or (high is not None and number > high):
        bound = f"between {low:g} and {high:g}" if high is not None else f">= {low:g}"
        shown = f"{number:.0%}" if unit.startswith("share") else f"{value!r}"
        raise ConfigError(f"{where}: {key} must be {bound} ({unit}), not {shown}")
    return number


def load_toml(path: str | Path) -> dict[str, Any]:
    """The ``[tco]`` table of a TOML file, checked.

    Raises:
        ConfigError: Unreadable file, bad TOML, no ``[tco]`` table, an unknown
            key, or a value out of range.
    """
    from greenml.config.toml_file import read_toml

    document = read_toml(path, "TCO file")
    table = document.get("tco")
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: no [tco] table")
    return check_mapping(table, str(path))


def check_mapping(table: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Known keys only, numbers in range, texts non-empty."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        if key not in KEYS:
            raise ConfigError(f"{where}: unknown key {key!r} (known: {', '.join(KEYS)})")
        if key in NUMBERS:
            out[key] = check_number(key, value, where)
        elif not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}: {key} must be a non-empty string, not {value!r}")
        else:
            out[key] = value.strip()
    return out


def merge(flags: Mapping[str, Any], file: Mapping[str, Any], path: str | None) -> dict[str, Given]:
    """Flags over the file: each value with its source (``None`` flags are not given).

    Raises:
        ConfigError: A flag out of range, or contradictory inputs.
    """
    merged: dict[str, Given] = {}
    for key, value in file.items():
        merged[key] = Given(value, f"{path}: {key}")
    for key, value in flags.items():
        if value is None:
            continue
        flag = flag_name(key)
        if key in NUMBERS:
            value = check_number(key, value, flag)
        merged[key] = Given(value, f"given ({flag})")
    _contradictions(merged)
    return merged


def flag_name(key: str) -> str:
    """``checkpoint_cost_s`` → ``--checkpoint-cost``; ``hardware_usd`` → ``--hardware-usd``."""
    return "--" + key.removesuffix("_s").replace("_", "-")


def _contradictions(given: Mapping[str, Given]) -> None:
    if "ci" in given and any(k in given for k in ("zone", "region", "country")):
        raise ConfigError("give a location (zone, region, country) or ci, not both")
    spot, demand = given.get("spot_price"), given.get("on_demand_price")
    if spot is not None and demand is not None and spot.value > demand.value:
        raise ConfigError(
            f"spot price {spot.value:g} USD/h is above the on-demand price {demand.value:g}"
        )
    reserved = given.get("reserved_price")
    if reserved is not None and demand is not None and reserved.value > demand.value:
        raise ConfigError(
            f"reserved price {reserved.value:g} USD/h is above the on-demand price "
            f"{demand.value:g}: a reservation that costs more is never chosen"
        )


@dataclass(frozen=True)
class ServerPrice:
    """A cited purchase price of a GPU server."""

    gpu: str
    gpus: int
    usd: float
    source: str
    date: str


@functools.cache
def server_prices() -> tuple[ServerPrice, ...]:
    """Rows of the packaged ``server_prices.csv``."""
    text = packaged("server_prices.csv").read_text(encoding="utf-8")
    return tuple(
        ServerPrice(r["gpu"], int(r["gpus"]), float(r["server_usd"]), r["source"], r["date"])
        for r in csv.DictReader(text.splitlines())
    )


def server_price(gpu: str) -> ServerPrice | None:
    """The packaged purchase price of a server of ``gpu`` boards (a GPU table name)."""
    return next((p for p in server_prices() if p.gpu == gpu), None)

"""Cost of a run: electricity at a flat price or an hourly price trace, and cloud instance hours.

Like carbon, electricity cost is time-weighted: facility energy in each price
step × that step's price (prices may be negative: wholesale markets pay for
consumption in some hours). The price is taken as exact (a tariff or a market
price is known, not estimated), so the cost's uncertainty is the energy's.

Instance prices (hours × price per hour) live in
:mod:`greenml.accounting.instances` and are re-exported here.
"""

from __future__ import annotations

import csv
import itertools
import math
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from greenml.accounting.instances import InstancePrice, instance_price
from greenml.accounting.profile import EVEN_SPREAD_NOTE, energy_profile
from greenml.accounting.pue import Pue
from greenml.accounting.series import StepSeries
from greenml.errors import ConfigError
from greenml.quantities import J_PER_KWH as JOULES_PER_KWH

__all__ = [
    "Cost",
    "FlatPrice",
    "InstancePrice",
    "PriceSource",
    "PriceTrace",
    "cost_of",
    "instance_price",
]

TIME_COLUMN = "Datetime (UTC)"
PRICE_COLUMN = "Price (USD/MWh)"
_MWH_PER_J = 1.0 / (1000.0 * JOULES_PER_KWH)


class PriceSource(Protocol):
    """Anything that gives electricity prices (USD/MWh) over a span."""

    @property
    def source(self) -> str:
        """Where the prices come from."""
        ...

    @property
    def resolution(self) -> str:
        """``flat``, ``hourly`` or ``sub-hourly``."""
        ...

    def prices(self, start_s: float, end_s: float) -> StepSeries:
        """Prices covering [start_s, end_s]; ConfigError naming the missing span otherwise."""
        ...


@dataclass(frozen=True)
class FlatPrice:
    """One electricity price for all time (a tariff), in USD per kWh."""

    usd_per_kwh: float
    source: str = "given by the user"
    resolution: str = "flat"

    def __post_init__(self) -> None:
        if not math.isfinite(self.usd_per_kwh) or not -10.0 <= self.usd_per_kwh < 100.0:
            raise ConfigError(
                f"electricity price must be -10 to 100 USD/kWh, got {self.usd_per_kwh}"
            )

    def prices(self, start_s: float, end_s: float) -> StepSeries:
        return StepSeries.constant(self.usd_per_kwh * 1000.0, "USD/MWh")

    def describe(self) -> str:
        return f"${self.usd_per_kwh:.3f}/kWh flat, {self.source}"


class PriceTrace:
    """Electricity prices over time from a CSV file (``Datetime (UTC),…,Price (USD/MWh)``).

    Missing hours inside the file are allowed until a run falls in them; then
    :meth:`prices` names the gap and the line after it.
    """

    def __init__(
        self, series: StepSeries, source: str, gaps: list[tuple[float, float, int]]
    ) -> None:
        self.series = series
        self.source = source
        self.gaps = gaps
        step = series.last_step_s
        self.resolution = "hourly" if step == 3600 else ("sub-hourly" if step < 3600 else "coarse")

    @classmethod
    def from_csv(cls, path: str | Path) -> PriceTrace:
        """Read a price trace (the format of Electricity Maps / green-dcc price exports).

        Raises:
            ConfigError: The file is unreadable, a column is missing, or a row
                is malformed or out of order (the message gives file:line).
        """
        path = Path(path)
        times: list[float] = []
        values: list[float] = []
        lines: list[int] = []
        try:
            with path.open(encoding="utf-8-sig", newline="") as handle:
                reader = csv.reader(handle)
                header = next(reader, None)
                t_col, p_col = _columns(header, path)
                for row in reader:
                    if not row or not any(cell.strip() for cell in row):
                        continue
                    where = f"{path}:{reader.line_num}"
                    if len(row) <= max(t_col, p_col):
                        raise ConfigError(f"{where}: expected {len(header or [])} columns")
                    t = _parse_time(row[t_col], where)
                    if times and t <= times[-1]:
                        raise ConfigError(
                            f"{where}: time {row[t_col]!r} is not after the row before"
                        )
                    times.append(t)
                    values.append(_parse_price(row[p_col], where))
                    lines.append(reader.line_num)
        except OSError as exc:
            raise ConfigError(f"cannot read price trace {path}: {exc.strerror}") from exc
        except (csv.Error, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: not a readable CSV file: {exc}") from exc
        if not times:
            raise ConfigError(f"{path}: no prices in the file")
        return cls._build(times, values, lines, str(path))

    @classmethod
    def _build(
        cls, times: list[float], values: list[float], lines: list[int], source: str
    ) -> PriceTrace:
        # The trace's step is its shortest one: a longer step is a hole in the data.
        step = min((b - a for a, b in itertools.pairwise(times)), default=3600.0)
        points_t: list[float] = [times[0]]
        points_v: list[float] = [values[0]]
        gaps: list[tuple[float, float, int]] = []
        for i in range(1, len(times)):
            if times[i] - times[i - 1] > 1.5 * step:  # a hole: no price from here on
                gaps.append((times[i - 1] + step, times[i], lines[i]))
                points_t.append(times[i - 1] + step)
                points_v.append(math.nan)
            points_t.append(times[i])
            points_v.append(values[i])
        series = StepSeries.from_points(points_t, points_v, "USD/MWh", last_step_s=step)
        return cls(series, source, gaps)

    def prices(self, start_s: float, end_s: float) -> StepSeries:
        """The series, once it is known to cover [start_s, end_s] without a gap.

        Raises:
            ConfigError: The span is outside the trace or falls in a gap.
        """
        if not self.series.covers(start_s, end_s):
            raise ConfigError(
                f"price trace {self.source} covers {_iso(self.series.start_s)} to "
                f"{_iso(self.series.end_s)}, not the run's {_iso(start_s)} to {_iso(end_s)}"
            )
        for g0, g1, line in self.gaps:
            if g0 < end_s and g1 > start_s:
                raise ConfigError(
                    f"price trace {self.source} has no price from {_iso(g0)} to {_iso(g1)} "
                    f"(gap before line {line}), during the run"
                )
        return self.series

    def describe(self) -> str:
        return f"{self.resolution} price trace {self.source}"


@dataclass(frozen=True)
class Cost:
    """Electricity cost of a run.

    Attributes:
        usd: Cost in US dollars.
        usd_per_kwh_effective: ``usd`` ÷ facility kWh.
        source: Where the price comes from.
        method: How price and energy were combined.
        pue: PUE applied; ``pue_source`` says where it comes from.
        it_energy_j: Measured IT energy; ``facility_energy_j`` = IT × PUE.
        uncertainty_rel: The energy's relative uncertainty (prices are exact).
    """

    usd: float
    usd_per_kwh_effective: float
    source: str
    method: str
    pue: float
    pue_source: str
    it_energy_j: float
    facility_energy_j: float
    uncertainty_rel: float

    def to_dict(self) -> dict[str, Any]:
        """The electricity part of a run record's ``cost`` block."""
        return {
            "status": "ok",
            "basis": "electricity",
            "usd": self.usd,
            "usd_per_kwh_effective": self.usd_per_kwh_effective,
            "source": self.source,
            "method": self.method,
            "pue": self.pue,
            "pue_source": self.pue_source,
            "it_energy_kwh": self.it_energy_j / JOULES_PER_KWH,
            "facility_energy_kwh": self.facility_energy_j / JOULES_PER_KWH,
            "uncertainty_rel": self.uncertainty_rel,
        }


def cost_of(
    times_s: Any,
    power_w: Any,
    measured_it_energy_j: float,
    price: PriceSource,
    pue: Pue,
    *,
    start_s: float | None = None,
    end_s: float | None = None,
    energy_uncertainty_rel: float = 0.0,
) -> Cost:
    """Time-weighted electricity cost of a run (arguments as in ``carbon_of``).

    Raises:
        ConfigError: The prices do not cover the run.
    """
    profile = energy_profile(times_s, power_w, measured_it_energy_j, start_s=start_s, end_s=end_s)
    t0, t1 = float(profile.times_s[0]), float(profile.times_s[-1])
    series = price.prices(t0, t1)
    usd = profile.weighted(series, scale=pue.value * _MWH_PER_J)
    facility_j = pue.facility_j(profile.total_j)
    facility_kwh = facility_j / JOULES_PER_KWH
    effective = usd / facility_kwh if facility_kwh > 0 else series.mean(t0, t1) / 1000.0
    flat = price.resolution == "flat"
    method = "flat price × energy" if flat else f"time-weighted, {price.resolution} prices"
    if profile.evenly and facility_kwh > 0:
        method += f"; {EVEN_SPREAD_NOTE}"
    describe = getattr(price, "describe", None)
    return Cost(
        usd=usd,
        usd_per_kwh_effective=effective,
        source=describe() if callable(describe) else price.source,
        method=method,
        pue=pue.value,
        pue_source=pue.source,
        it_energy_j=profile.total_j,
        facility_energy_j=facility_j,
        uncertainty_rel=energy_uncertainty_rel,
    )


def _columns(header: list[str] | None, path: Path) -> tuple[int, int]:
    names = [h.strip().lower() for h in header or []]
    try:
        return names.index(TIME_COLUMN.lower()), names.index(PRICE_COLUMN.lower())
    except ValueError:
        raise ConfigError(
            f"{path}:1: expected the columns {TIME_COLUMN!r} and {PRICE_COLUMN!r}, "
            f"got {', '.join(header or []) or 'an empty line'}"
        ) from None


def _parse_time(text: str, where: str) -> float:
    raw = text.strip()
    try:
        moment = datetime.fromisoformat(raw[:-1] + "+00:00" if raw.endswith("Z") else raw)
    except ValueError:
        raise ConfigError(f"{where}: malformed time {text!r} (ISO 8601 expected)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)  # the column is UTC by name
    return moment.timestamp()


def _parse_price(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{where}: malformed price {text!r} (USD/MWh expected)") from None
    if not math.isfinite(value):
        raise ConfigError(f"{where}: malformed price {text!r} (USD/MWh expected)")
    return value


def _iso(time_s: float) -> str:
    if not math.isfinite(time_s):
        return "the beginning" if time_s < 0 else "the end of time"
    return datetime.fromtimestamp(time_s, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

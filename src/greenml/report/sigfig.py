"""Numbers as statements, EU AI Act and SCI reports print them: significant figures.

Rounding rule (:func:`sig`): at least ``digits`` significant figures, and the
digits left of the decimal point are never rounded away: 0.003142 → ``0.0031``,
12.4 → ``12``, 1234.5 → ``1,235`` (not ``1,200``: the uncertainty is shown
beside the figure, so rounding to the tens would only hide what was measured).
Halves round up. Below 1e-4 the figure is written ``4.2e-07``.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

J_PER_KWH = 3.6e6
_SMALL = 1e-4


def sig(value: float, digits: int = 2) -> str:
    """``value`` with at least ``digits`` significant figures and thousands separators.

    Args:
        value: The number; ``nan`` and infinities are written as Python does.
        digits: Minimum significant figures (1 or more).
    """
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0"
    if abs(value) < _SMALL:
        return f"{value:.{max(digits - 1, 0)}e}"
    number = Decimal(repr(float(value)))
    decimals = max(0, digits - 1 - number.adjusted())
    rounded = number.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    if rounded.adjusted() > number.adjusted() and decimals > 0:  # 0.0999 → 0.10, not 0.100
        decimals -= 1
        rounded = number.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    return f"{rounded:,.{decimals}f}"


def count(value: float) -> str:
    """A count: ``250``, ``1,500,000,000`` when whole, else three significant figures."""
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    return sig(value, 3)


def plural(n: int, noun: str) -> str:
    """``1 run``, ``3 runs``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def digits_for(uncertainty_rel: float | None) -> int:
    """Significant figures a figure with this relative uncertainty deserves (2 or 3)."""
    return 3 if uncertainty_rel is not None and uncertainty_rel < 0.05 else 2


def round_to(value: float, uncertainty_rel: float | None) -> float:
    """``value`` to the significant figures its uncertainty allows (:func:`digits_for`).

    No false precision: ``1,238,630 L ±60 %`` is ``1,200,000 L ±60 %``.
    """
    if value == 0 or not math.isfinite(value):
        return value
    digits = digits_for(uncertainty_rel)
    return round(value, digits - 1 - math.floor(math.log10(abs(value))))


def percent(rel: float | None) -> str:
    """``±12 %``; ``±?`` when unknown."""
    if rel is None or not math.isfinite(rel):
        return "±?"
    return f"±{sig(rel * 100, 2)} %"


def kwh(joules: float, digits: int = 2) -> str:
    """Joules as kWh, e.g. ``1.2 kWh``."""
    return f"{sig(joules / J_PER_KWH, digits)} kWh"


def mwh(joules: float, digits: int = 2) -> str:
    """Joules as MWh, e.g. ``0.0031 MWh``."""
    return f"{sig(joules / J_PER_KWH / 1000, digits)} MWh"


def energy(joules: float, digits: int = 2) -> str:
    """Energy in the unit a person reads best: J, Wh, kWh or MWh."""
    magnitude = abs(joules)
    if magnitude < 360:
        return f"{sig(joules, digits)} J"
    if magnitude < 0.1 * J_PER_KWH:
        return f"{sig(joules / 3600, digits)} Wh"
    if magnitude < 1000 * J_PER_KWH:
        return kwh(joules, digits)
    return mwh(joules, digits)


def co2(kg: float, digits: int = 2) -> str:
    """CO2eq in µg, mg, g, kg or t (``2.4 mg CO2eq``, never ``0.0024 g``)."""
    magnitude = abs(kg)
    if 0 < magnitude < 1e-6:
        return f"{sig(kg * 1e9, digits)} µg CO2eq"
    if 0 < magnitude < 1e-3:
        return f"{sig(kg * 1e6, digits)} mg CO2eq"
    if magnitude < 1:
        return f"{sig(kg * 1000, digits)} g CO2eq"
    if magnitude < 1000:
        return f"{sig(kg, digits)} kg CO2eq"
    return f"{sig(kg / 1000, digits)} t CO2eq"


def duration(seconds: float, digits: int = 2) -> str:
    """Wall-clock time in s, min or h, e.g. ``42 s``, ``12 min``, ``3.5 h``."""
    if abs(seconds) < 60:
        return f"{sig(seconds, digits)} s"
    if abs(seconds) < 3600:
        return f"{sig(seconds / 60, digits)} min"
    return hours(seconds, digits)


def hours(seconds: float, digits: int = 2) -> str:
    """Seconds as hours, e.g. ``3.5 h``."""
    return f"{sig(seconds / 3600, digits)} h"


def usd(amount: float) -> str:
    """US dollars: cents from one dollar up, two significant figures below."""
    if abs(amount) >= 1:
        return f"${amount:,.2f}"
    return f"${sig(amount, 2)}"


def scientific(value: float, digits: int = 2) -> str:
    """``3.1 × 10^23``: large counts such as FLOPs or tokens."""
    if value == 0 or not math.isfinite(value):
        return sig(value, digits)
    exponent = math.floor(math.log10(abs(value)))
    mantissa = value / 10**exponent
    if round(abs(mantissa), digits - 1) >= 10:
        exponent += 1
        mantissa /= 10
    return f"{mantissa:.{digits - 1}f} × 10^{exponent}"

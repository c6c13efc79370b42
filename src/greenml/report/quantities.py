"""How figures read in report text: energy, mass, money and percentages, with ± where given.

Values come in base units (J, g CO2eq, USD) and are shown in the unit a person
reads best; a value and its uncertainty always share one unit.
"""

from __future__ import annotations

import math

# (from this many base units, divide by, unit): like `greenml runs show` (kJ up to 36 kJ).
_ENERGY_UNITS = (
    (3.6e9, 3.6e9, "MWh"), (3.6e6, 3.6e6, "kWh"), (36_000.0, 3600.0, "Wh"),
    (1000.0, 1000.0, "kJ"), (0.0, 1.0, "J"),
)  # fmt: skip
_MASS_UNITS = ((1e6, 1e6, "t"), (1000.0, 1000.0, "kg"), (1.0, 1.0, "g"), (0.0, 1e-3, "mg"))


def sig(value: float, digits: int = 3) -> str:
    """``value`` with about ``digits`` significant digits, thousands separated (``12,300``)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = digits - 1 - magnitude
    if decimals < 0:
        return f"{round(value, decimals):,.0f}"
    return f"{value:,.{decimals}f}"


def _scaled(value: float, units: tuple[tuple[float, float, str], ...]) -> tuple[float, str]:
    if value == 0:
        return next((factor, name) for _, factor, name in units if factor == 1.0)
    for threshold, factor, name in units:
        if abs(value) >= threshold:
            return factor, name
    return units[-1][1:]


def energy(joules: float, uncertainty_j: float | None = None) -> str:
    """``41.2 J``, ``3.40 kWh``; with ``± u`` in the same unit when given."""
    factor, name = _scaled(joules, _ENERGY_UNITS)
    return _with(joules / factor, None if uncertainty_j is None else uncertainty_j / factor, name)


def mass(grams: float, uncertainty_g: float | None = None) -> str:
    """CO2eq mass: ``12.3 kg``, ``450 g`` (``± u`` in the same unit when given)."""
    factor, name = _scaled(grams, _MASS_UNITS)
    return _with(grams / factor, None if uncertainty_g is None else uncertainty_g / factor, name)


def money(usd: float, uncertainty_usd: float | None = None) -> str:
    """``$12,300``, ``$0.0042`` (``± $u`` when given, to 2 significant digits)."""
    sign = "-" if usd < 0 else ""
    amount = abs(usd)
    text = f"{sign}${amount:,.0f}" if amount >= 100 else f"{sign}${sig(amount)}"
    if uncertainty_usd is None:
        return text
    return f"{text} ± ${sig(abs(uncertainty_usd), 2)}"


def percent(rel: float, signed: bool = False) -> str:
    """``12.4 %`` (``+12.4 %`` when signed); one decimal below 10 %."""
    value = rel * 100
    digits = 1 if abs(value) < 10 else 0
    text = f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
    return f"{text} %"


def percent_pm(rel: float, uncertainty_rel: float, signed: bool = False) -> str:
    """``+12.4 % ± 3.1 %``."""
    return f"{percent(rel, signed)} ± {percent(abs(uncertainty_rel))}"


def _with(value: float, uncertainty: float | None, unit: str) -> str:
    if uncertainty is None:
        return f"{sig(value)} {unit}"
    return f"{sig(value)} ± {sig(abs(uncertainty), 2)} {unit}"

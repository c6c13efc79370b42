"""Quantities as people read them: energy, mass, money, durations and percentages.

One rounding rule (:mod:`~greenml.quantities.rounding`: significant figures as
many as the uncertainty allows), one J-per-kWh constant, one ladder of units
per kind (:mod:`~greenml.quantities.units`: the unit that fits, for a figure
and for a chart's axis). The terminal, reports, the dashboard and notebooks all
format through here, so 100 kJ reads ``100 kJ`` wherever it is printed.

A ground-floor package: it imports nothing from greenml but itself (and
``errors``), so every layer can use it.
"""

from __future__ import annotations

from greenml.quantities.durations import clock_text, duration, elapsed, hours, utc_text
from greenml.quantities.energy import (
    ENERGY_UNITS,
    J_PER_KWH,
    J_PER_MWH,
    POWER_UNITS,
    energy,
    energy_axis,
    joules_text,
    kwh,
    mwh,
    power,
)
from greenml.quantities.mass import MASS_UNITS, co2, mass, mass_axis
from greenml.quantities.money import MONEY_AXIS_UNITS, money, money_axis
from greenml.quantities.percent import percent, percent_pm, pm
from greenml.quantities.rounding import count, digits_for, round_to, scientific, sig
from greenml.quantities.units import Ladder, axis_unit, scaled, unit_for
from greenml.quantities.volume import LITRE_UNITS, litres

__all__ = [
    "ENERGY_UNITS",
    "J_PER_KWH",
    "J_PER_MWH",
    "LITRE_UNITS",
    "MASS_UNITS",
    "MONEY_AXIS_UNITS",
    "POWER_UNITS",
    "Ladder",
    "axis_unit",
    "clock_text",
    "co2",
    "count",
    "digits_for",
    "duration",
    "elapsed",
    "energy",
    "energy_axis",
    "hours",
    "joules_text",
    "kwh",
    "litres",
    "mass",
    "mass_axis",
    "money",
    "money_axis",
    "mwh",
    "percent",
    "percent_pm",
    "pm",
    "power",
    "round_to",
    "scaled",
    "scientific",
    "sig",
    "unit_for",
    "utc_text",
]  # fmt: skip

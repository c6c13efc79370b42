"""Energy as text: one rule for every place a person reads joules.

One family of units, J and its SI prefixes up to kJ, then kWh (from 0.1 kWh)
and up (no Wh, no MJ): 100 kJ reads ``100 kJ`` everywhere, 1 MJ ``0.278 kWh``.
"""

from __future__ import annotations

from greenml.quantities.units import axis_unit, scaled

J_PER_KWH = 3.6e6
"""Joules in a kilowatt-hour (the one constant; kWh appears only at the edges)."""
J_PER_MWH = 1000 * J_PER_KWH
"""Joules in a megawatt-hour."""

ENERGY_UNITS = (
    (1e-6, "µJ"), (1e-3, "mJ"), (1.0, "J"), (1e3, "kJ"), (J_PER_KWH, "kWh", 0.1 * J_PER_KWH),
    (J_PER_MWH, "MWh"), (1e3 * J_PER_MWH, "GWh"), (1e6 * J_PER_MWH, "TWh"),
)  # fmt: skip
"""Joules as people read them, smallest first."""


def energy(
    joules: float,
    uncertainty_j: float | None = None,
    *,
    uncertainty_rel: float | None = None,
    digits: int | None = None,
    like: float | None = None,
) -> str:
    """``51.0 J``, ``14.2 kJ``, ``560 kWh``; ``41 ± 4.1 J`` with ``uncertainty_j``.

    The figures follow the uncertainty (:mod:`greenml.quantities.rounding`); ``like``
    shows the figure in the unit another one takes (a total beside its projection).
    """
    return scaled(joules, ENERGY_UNITS, uncertainty=uncertainty_j,
                  uncertainty_rel=uncertainty_rel, digits=digits, like=like)  # fmt: skip


def kwh(joules: float, digits: int | None = None, uncertainty_rel: float | None = None) -> str:
    """Joules as kWh whatever their size (a table column in kWh): ``1.2 kWh``."""
    return scaled(joules / J_PER_KWH, ((1.0, "kWh"),), uncertainty_rel=uncertainty_rel,
                  digits=digits)  # fmt: skip


def mwh(joules: float, digits: int | None = None, uncertainty_rel: float | None = None) -> str:
    """Joules as MWh whatever their size (the EU AI Act's unit): ``0.0031 MWh``."""
    return scaled(joules / J_PER_MWH, ((1.0, "MWh"),), uncertainty_rel=uncertainty_rel,
                  digits=digits)  # fmt: skip


def energy_axis(largest_j: float) -> tuple[float, str]:
    """(joules per unit, unit) for a chart whose largest value is ``largest_j``."""
    return axis_unit(largest_j, ENERGY_UNITS[2:])


def joules_text(joules: float) -> str:
    """The same as :func:`energy` (the name the scheduler's messages use)."""
    return energy(joules)


POWER_UNITS = ((1e-3, "mW"), (1.0, "W"), (1e3, "kW"), (1e6, "MW"))
"""Watts as people read them, smallest first."""


def power(watts: float, digits: int | None = None) -> str:
    """Watts in the unit that fits: ``13.0 W``, ``1.51 kW``."""
    return scaled(watts, POWER_UNITS, digits=digits)

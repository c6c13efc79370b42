"""CO2eq mass as text: grams in, µg to tonnes out (``2.4 mg``, never ``0.0024 g``)."""

from __future__ import annotations

from greenml.quantities.units import axis_unit, scaled

MASS_UNITS = ((1e-6, "µg"), (1e-3, "mg"), (1.0, "g"), (1e3, "kg"), (1e6, "t"))
"""Grams as people read them, smallest first."""


def mass(
    grams: float,
    uncertainty_g: float | None = None,
    *,
    uncertainty_rel: float | None = None,
    digits: int | None = None,
    like: float | None = None,
) -> str:
    """``12.3 kg``, ``450 g``, ``57.2 mg``; ``12 ± 1.2 kg`` with ``uncertainty_g``."""
    return scaled(grams, MASS_UNITS, uncertainty=uncertainty_g, uncertainty_rel=uncertainty_rel,
                  digits=digits, like=like)  # fmt: skip


def co2(grams: float, *, uncertainty_rel: float | None = None, digits: int | None = None) -> str:
    """CO2eq: ``2.4 mg CO2eq``, ``1.20 t CO2eq``."""
    return f"{mass(grams, uncertainty_rel=uncertainty_rel, digits=digits)} CO2eq"


def mass_axis(largest_g: float) -> tuple[float, str]:
    """(grams per unit, unit) for a chart whose largest value is ``largest_g``:
    a week of small runs reads ``50 mg``, never ``5e-05 kg``."""
    return axis_unit(largest_g, MASS_UNITS)

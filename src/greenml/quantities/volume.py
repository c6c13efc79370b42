"""Water as text: litres in, ``479 mL``, ``2.50 L``, ``1.20 m³`` out."""

from __future__ import annotations

from greenml.quantities.units import scaled

LITRE_UNITS = ((1e-3, "mL"), (1.0, "L"), (1e3, "m³"))
"""Litres as people read them, smallest first."""


def litres(value: float, uncertainty_rel: float | None = None) -> str:
    """Litres in the unit that fits, figures by the uncertainty when given."""
    return scaled(value, LITRE_UNITS, uncertainty_rel=uncertainty_rel)

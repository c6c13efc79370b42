"""Energy as text: one rule for every place a person reads joules."""

from __future__ import annotations

J_PER_KWH = 3.6e6
"""Joules in a kilowatt-hour (the one constant; kWh appears only at the edges)."""


def joules_text(joules: float) -> str:
    """``12.3 kJ``, ``4.56 kWh``: the unit a person reads best."""
    if joules >= 0.1 * J_PER_KWH:
        return f"{joules / J_PER_KWH:.3g} kWh"
    for unit, scale in (("MJ", 1e6), ("kJ", 1e3)):
        if joules >= scale:
            return f"{joules / scale:.3g} {unit}"
    return f"{joules:.3g} J"

"""Units that scale: a value shown in the unit of its ladder that fits it.

A ladder is ``((size in base units, name), ...)``, smallest first, with one
unit of size 1 (the base unit). The unit chosen is the largest one the value
(rounded first, so 999.9 J reads ``1.00 kJ``) reaches; a figure shown beside
another (``like``) takes that one's unit, and a value with its uncertainty
shares one unit: ``41 ± 4.1 J``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from greenml.quantities.rounding import DEFAULT_DIGITS, digits_for, sig, spread

Ladder = Sequence[tuple[float, str] | tuple[float, str, float]]
"""(size, name) smallest first; a third number is where the unit starts when not at its size
(kWh from 0.1 kWh, so 1 MJ reads ``0.28 kWh``, never ``1,000 kJ``)."""


def unit_for(value: float, ladder: Ladder, digits: int = DEFAULT_DIGITS) -> tuple[float, str]:
    """(size, name) of the unit ``value`` is shown in: the largest it reaches once rounded."""
    base = next(unit for unit in ladder if unit[0] == 1.0)
    if value == 0 or not math.isfinite(value):
        return base[0], base[1]
    rounded = float(f"{abs(value):.{max(digits, 1)}g}")
    chosen = ladder[0]
    for unit in ladder:
        if rounded >= (unit[2] if len(unit) > 2 else unit[0]) * (1 - 1e-12):
            chosen = unit
    return chosen[0], chosen[1]


def axis_unit(largest: float, ladder: Ladder) -> tuple[float, str]:
    """(size, name) for a chart whose largest value is ``largest`` (base units).

    The largest unit it reaches (at least 1 of it; kWh from 0.1), so an axis never reads
    ``5e-05 kg`` or ``2.43e-06 kWh``; the base unit for an empty or all-zero chart.
    """
    return unit_for(largest, ladder, digits=15)


def scaled(
    value: float,
    ladder: Ladder,
    *,
    uncertainty: float | None = None,
    uncertainty_rel: float | None = None,
    digits: int | None = None,
    like: float | None = None,
) -> str:
    """``value`` (base units) as text in the unit that fits it: ``14.2 kJ``, ``41 ± 4.1 J``.

    Args:
        value: The figure, in the ladder's base unit.
        ladder: The units it may be shown in.
        uncertainty: An absolute uncertainty (base units), shown as ``± u`` in the same unit.
        uncertainty_rel: A relative uncertainty: it sets the figures (not shown).
        digits: Significant figures; else as many as the uncertainty allows
            (:func:`~greenml.quantities.rounding.digits_for`), three without one.
        like: Show in the unit this figure would take (figures side by side).
    """
    if uncertainty_rel is None and uncertainty is not None and value:
        uncertainty_rel = abs(uncertainty / value)
    if digits is None:
        digits = DEFAULT_DIGITS if uncertainty_rel is None else digits_for(uncertainty_rel)
    if not math.isfinite(value):
        return f"{value} {unit_for(0.0, ladder)[1]}"
    size, name = unit_for(value if like is None else like, ladder, digits)
    shown = sig(value / size, digits)
    if uncertainty is None:
        return f"{shown} {name}"
    return f"{shown} ± {spread(abs(uncertainty) / size)} {name}"

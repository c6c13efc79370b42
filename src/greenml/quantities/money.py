"""Money as text: US dollars, ``$1,235``, ``$12.35``, ``$0.0042``."""

from __future__ import annotations

import math

from greenml.quantities.rounding import DEFAULT_DIGITS, digits_for, sig, spread
from greenml.quantities.units import axis_unit


def money(
    usd: float,
    uncertainty_usd: float | None = None,
    *,
    uncertainty_rel: float | None = None,
    digits: int | None = None,
) -> str:
    """Whole dollars from $100, cents from $1, significant figures below a dollar.

    ``± $u`` follows when ``uncertainty_usd`` is given (two significant figures).
    """
    if not math.isfinite(usd):
        return f"${usd}"
    if uncertainty_rel is None and uncertainty_usd is not None and usd:
        uncertainty_rel = abs(uncertainty_usd / usd)
    if digits is None:
        digits = DEFAULT_DIGITS if uncertainty_rel is None else digits_for(uncertainty_rel)
    sign, amount = ("-" if usd < 0 else ""), abs(usd)
    if amount >= 100:
        text = f"{sign}${amount:,.0f}"
    elif amount >= 1:
        text = f"{sign}${amount:,.2f}"
    elif amount >= 1e-10:  # a tiny run's cost: $0.000066, never $6.6e-05
        decimals = digits - 1 - math.floor(math.log10(amount))
        text = f"{sign}${amount:.{decimals}f}"
    else:
        text = f"{sign}${sig(amount, digits)}" if amount else "$0.00"
    if uncertainty_usd is None:
        return text
    return f"{text} ± ${_spread(abs(uncertainty_usd))}"


def _spread(usd: float) -> str:
    """A ± in dollars to two significant figures, never with an exponent (``0.000010``)."""
    if 1e-10 <= usd < 1:
        return f"{usd:.{max(1 - math.floor(math.log10(usd)), 0)}f}"
    return spread(usd)


MONEY_AXIS_UNITS = ((1e-6, "µUSD"), (1e-3, "mUSD"), (1.0, "USD"), (1e3, "kUSD"), (1e6, "MUSD"))
"""US dollars on a chart's axis, smallest first (SI prefixes: ticks of 1 to 999)."""


def money_axis(largest_usd: float) -> tuple[float, str]:
    """(dollars per unit, unit) for a chart whose largest value is ``largest_usd``:
    a day of small runs reads ``66 µUSD``, never ``6.6e-05 USD``."""
    return axis_unit(largest_usd, MONEY_AXIS_UNITS)

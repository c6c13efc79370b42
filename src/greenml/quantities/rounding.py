"""The one rounding rule: significant figures, as many as the uncertainty allows.

:func:`sig` keeps at least ``digits`` significant figures and never rounds away
the digits left of the decimal point: 0.003142 → ``0.00314``, 1234.5 → ``1,235``
(not ``1,230``: the uncertainty is shown beside the figure, so rounding to the
tens would only hide what was measured). Halves round up. :func:`digits_for`
ties the number of figures to the uncertainty: three when a figure is known to
better than ±5 %, two otherwise (an unknown uncertainty included). A figure
given without any uncertainty (a terminal table prints it in its own column)
keeps :data:`DEFAULT_DIGITS`.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal, localcontext

PRECISE_BELOW = 0.05
"""A relative uncertainty under this earns a third significant figure."""
DEFAULT_DIGITS = 3
"""Significant figures of a figure given without an uncertainty."""
TINY = 1e-4
"""Below this (in the unit shown) a figure is written ``4.2e-07``: no unit is that small."""


def digits_for(uncertainty_rel: float | None) -> int:
    """Significant figures a figure with this relative uncertainty deserves (2 or 3)."""
    if uncertainty_rel is None or not math.isfinite(uncertainty_rel):
        return 2
    return 3 if abs(uncertainty_rel) < PRECISE_BELOW else 2


def sig(value: float, digits: int = 3) -> str:
    """``value`` with at least ``digits`` significant figures and thousands separators.

    Args:
        value: The number; ``nan`` and infinities are written as Python does.
        digits: Minimum significant figures (1 or more).
    """
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0"
    if abs(value) < TINY:
        return f"{value:.{max(digits - 1, 0)}e}"
    number = Decimal(repr(float(value)))
    decimals = max(0, digits - 1 - number.adjusted())
    with localcontext() as exact:
        exact.prec = 400  # every float's integer digits (1e308 has 309): quantize never fails
        rounded = number.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
        if rounded.adjusted() > number.adjusted() and decimals > 0:  # 0.0999 → 0.10, not 0.100
            decimals -= 1
            rounded = number.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    return f"{rounded:,.{decimals}f}"


def spread(uncertainty: float) -> str:
    """An absolute uncertainty: two significant figures, integer digits included (``120``)."""
    if uncertainty == 0 or not math.isfinite(uncertainty):
        return sig(uncertainty, 2)
    return sig(round(uncertainty, 1 - math.floor(math.log10(abs(uncertainty)))), 2)


def round_to(value: float, uncertainty_rel: float | None) -> float:
    """``value`` to the significant figures its uncertainty allows (:func:`digits_for`).

    No false precision: ``1,238,630 L ±60 %`` is ``1,200,000 L ±60 %``.
    """
    if value == 0 or not math.isfinite(value):
        return value
    digits = digits_for(uncertainty_rel)
    return round(value, digits - 1 - math.floor(math.log10(abs(value))))


def count(value: float) -> str:
    """A count: ``250``, ``1,500,000,000`` when whole, else three significant figures."""
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    return sig(value, 3)


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

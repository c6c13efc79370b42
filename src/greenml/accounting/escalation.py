"""Prices that rise (or fall) by a rate per year, for multi-year figures.

Two readings of one rate ``r`` (0.03 = +3 % a year), prices of today at year 0:

- :func:`mean_factor`: the mean price over a horizon of ``Y`` years relative to today's,
  ``((1 + r)^Y − 1) ÷ (Y · ln(1 + r))`` (prices grow continuously; 1 when r = 0). The
  TCO multiplies hourly rents and the electricity price by it;
- :func:`over_years`: a yearly saving summed over ``Y`` whole years, the year k one at
  ``(1 + r)^k`` (k = 0 … Y − 1). The savings plan states its money over the years so.
"""

from __future__ import annotations

import math

from greenml.errors import ConfigError

MIN_RATE, MAX_RATE = -0.5, 1.0


def check_rate(rate: float) -> float:
    """The rate, or ConfigError when it is not between −50 % and +100 % a year."""
    if not math.isfinite(rate) or not MIN_RATE <= rate <= MAX_RATE:
        raise ConfigError(f"price escalation must be between -50% and 100% a year, not {rate!r}")
    return rate


def mean_factor(rate: float, years: float) -> float:
    """Mean price over ``years`` ÷ today's price, for prices growing by ``rate`` a year."""
    check_rate(rate)
    if years <= 0 or abs(rate) < 1e-12:
        return 1.0
    growth = math.log1p(rate)
    return math.expm1(growth * years) / (years * growth)


def over_years(yearly: float, rate: float, years: float) -> float:
    """A yearly amount at today's prices summed over ``years`` years of escalation (a part
    year last: its share of that year's amount)."""
    check_rate(rate)
    whole = int(max(years, 0.0))
    total = sum(yearly * (1.0 + rate) ** k for k in range(whole))
    return total + yearly * (1.0 + rate) ** whole * (max(years, 0.0) - whole)

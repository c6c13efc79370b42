"""Shares and relative uncertainties as text: ``12 %``, ``+3.4 %``, ``±12 %``."""

from __future__ import annotations

import math

from greenml.quantities.rounding import sig


def percent(rel: float, signed: bool = False, *, digits: int = 2) -> str:
    """A fraction as a percentage with ``digits`` significant figures: ``12 %``, ``0.50 %``."""
    if not math.isfinite(rel):
        return f"{rel} %"
    text = sig(rel * 100, digits)
    if signed and rel >= 0:
        text = "+" + text
    return f"{text} %"


def pm(rel: float | None) -> str:
    """A relative uncertainty, two significant figures: ``±12 %``, ``±4.9 %``; ``±?`` when
    unknown."""
    if rel is None or not math.isfinite(rel):
        return "±?"
    return f"±{sig(abs(rel) * 100, 2)} %"


def percent_pm(rel: float, uncertainty_rel: float, signed: bool = False) -> str:
    """``+12 % ± 3.1 %``."""
    return f"{percent(rel, signed=signed)} ± {percent(abs(uncertainty_rel))}"

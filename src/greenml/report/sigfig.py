"""The report vocabulary over :mod:`greenml.quantities` (statements, EU AI Act, SCI).

Nothing here rounds or picks a unit on its own: each name hands its figure to
the one quantities module, with the significant figures a report asks for
(``digits``, from :func:`~greenml.quantities.digits_for` where an uncertainty is
known). Carbon comes in kilograms here, as the report model holds it.
"""

from __future__ import annotations

import greenml.quantities as q
from greenml.quantities import J_PER_KWH, count, digits_for, round_to, scientific, sig

__all__ = [
    "J_PER_KWH", "co2", "count", "digits_for", "duration", "energy", "hours", "kwh", "mwh",
    "percent", "plural", "round_to", "scientific", "sig", "usd",
]  # fmt: skip


def plural(n: int, noun: str) -> str:
    """``1 run``, ``3 runs``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def percent(rel: float | None) -> str:
    """``±12 %``; ``±?`` when unknown."""
    return q.pm(rel)


def kwh(joules: float, digits: int = 2) -> str:
    """Joules as kWh, e.g. ``1.2 kWh``."""
    return q.kwh(joules, digits)


def mwh(joules: float, digits: int = 2) -> str:
    """Joules as MWh, e.g. ``0.0031 MWh``."""
    return q.mwh(joules, digits)


def energy(joules: float, digits: int = 2) -> str:
    """Energy in the unit that fits (:func:`greenml.quantities.energy`)."""
    return q.energy(joules, digits=digits)


def co2(kg: float, digits: int = 2) -> str:
    """CO2eq from kilograms, in µg … t (``2.4 mg CO2eq``, never ``0.0024 g``)."""
    return q.co2(kg * 1000.0, digits=digits)


def duration(seconds: float, digits: int = 2) -> str:
    """Wall-clock time in s, min or h, e.g. ``42 s``, ``12 min``, ``3.5 h``."""
    return q.duration(seconds, digits)


def hours(seconds: float, digits: int = 2) -> str:
    """Seconds as hours, e.g. ``3.5 h``."""
    return q.hours(seconds, digits)


def usd(amount: float) -> str:
    """US dollars (:func:`greenml.quantities.money`), two significant figures below $1."""
    return q.money(amount, digits=2)

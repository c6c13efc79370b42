"""Energy, carbon and cost budgets of a run, judged on its projection's lower bound.

A budget is one limit in one unit: kWh of measured energy, kg CO2eq or USD.
It is passed when what the run is *sure* to spend passes it: the lower bound
of the projection at 100 % (``greenml.progress`` / ``run.progress``), or,
without a projection, what it has spent already. The verdict carries the
projected total, so the warning says where the run is heading, not only that
it crossed a line.

``on_budget="warn"`` logs one warning; ``"stop"`` sends the program SIGTERM,
so a resilience checkpointer saves and exits 75 (see :mod:`greenml.resilience`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal

from greenml.errors import ConfigError

OnBudget = Literal["warn", "stop"]
ON_BUDGET = ("warn", "stop")

# unit as written → (canonical unit, factor to it)
_UNITS: dict[str, tuple[str, float]] = {
    "kwh": ("kWh", 1.0),
    "wh": ("kWh", 1e-3),
    "mwh": ("kWh", 1e3),
    "kg": ("kg", 1.0),
    "g": ("kg", 1e-3),
    "t": ("kg", 1e3),
    "usd": ("USD", 1.0),
    "$": ("USD", 1.0),
}
_SYNTAX = "a number and a unit: 2kWh, 500Wh, 1.5kg, 300g, 10usd"
_PATTERN = re.compile(r"^\s*\$?\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zA-Z$]*)\s*$")


@dataclass(frozen=True)
class Budget:
    """A limit: ``limit`` in ``unit`` (``kWh``, ``kg`` CO2eq or ``USD``), and what to do."""

    limit: float
    unit: str
    on_budget: OnBudget = "warn"

    def __post_init__(self) -> None:
        if not math.isfinite(self.limit) or self.limit <= 0:
            raise ConfigError(f"a budget must be a finite number > 0, got {self.limit!r}")
        if self.unit not in ("kWh", "kg", "USD"):
            raise ConfigError(f"a budget is in kWh, kg or USD, got {self.unit!r}")
        if self.on_budget not in ON_BUDGET:
            raise ConfigError(f"on_budget must be 'warn' or 'stop', got {self.on_budget!r}")

    def text(self) -> str:
        return f"{self.limit:g} {self.unit}" + (" CO2eq" if self.unit == "kg" else "")

    def to_dict(self) -> dict[str, Any]:
        return {"limit": self.limit, "unit": self.unit, "on_budget": self.on_budget}


def parse_budget(text: str, on_budget: str = "warn") -> Budget:
    """``"2kWh"``, ``"1.5kg"``, ``"10usd"`` (also ``Wh``, ``MWh``, ``g``, ``t``, ``$10``).

    Raises:
        ConfigError: Not a positive number followed by a known unit.
    """
    match = _PATTERN.match(text or "")
    unit_text = (match.group(2) if match else "").lower() or ("usd" if "$" in text else "")
    if match is None or unit_text not in _UNITS:
        raise ConfigError(f"budget {text!r} is not {_SYNTAX}")
    unit, factor = _UNITS[unit_text]
    return Budget(float(match.group(1)) * factor, unit, on_budget)  # type: ignore[arg-type]


def budget_from(
    kwh: float | None, kg: float | None, usd: float | None, on_budget: str
) -> Budget | None:
    """The one budget of ``Run(budget_kwh=|budget_kg=|budget_usd=)``; ``None`` when none.

    Raises:
        ConfigError: More than one given, or a bad value.
    """
    given = [(v, u) for v, u in ((kwh, "kWh"), (kg, "kg"), (usd, "USD")) if v is not None]
    if len(given) > 1:
        raise ConfigError("give one budget: budget_kwh, budget_kg or budget_usd")
    if not given:
        if on_budget not in ON_BUDGET:
            raise ConfigError(f"on_budget must be 'warn' or 'stop', got {on_budget!r}")
        return None
    value, unit = given[0]
    try:
        limit = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"budget {value!r} is not a number") from None
    return Budget(limit, unit, on_budget)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Verdict:
    """A passed budget: the sure lower bound and the projected total, in the budget's unit."""

    budget: Budget
    lower: float
    projected: float | None
    basis: str  # "projection" or "spent so far"

    def message(self) -> str:
        unit = self.budget.unit
        ahead = f"; projected total {self.projected:.4g} {unit}" if self.projected else ""
        return (
            f"greenml: budget {self.budget.text()} will be passed: at least {self.lower:.4g} "
            f"{unit} ({self.basis}){ahead}"
        )

    def to_dict(self, t: float) -> dict[str, Any]:
        return {**self.budget.to_dict(), "passed_at": t, "lower": self.lower,
                "projected": self.projected, "basis": self.basis}  # fmt: skip


def check_budget(
    budget: Budget,
    *,
    spent_j: float,
    projection: Any | None,
    g_per_kwh: float | None,
    usd_per_kwh: float | None,
) -> Verdict | None:
    """The verdict when the budget is sure to be passed; ``None`` while it is not (or unknown).

    Args:
        spent_j: Energy measured so far.
        projection: The latest :class:`~greenml.run.projection.Projection`, if any.
        g_per_kwh: Effective carbon per measured kWh (PUE included); ``None``: unknown,
            so a carbon budget cannot be judged yet.
        usd_per_kwh: Effective cost per measured kWh.
    """
    per_kwh = {"kWh": 1.0, "kg": None if g_per_kwh is None else g_per_kwh / 1000,
               "USD": usd_per_kwh}[budget.unit]  # fmt: skip
    if per_kwh is None:
        return None
    spent = spent_j / 3.6e6 * per_kwh
    lower, projected, basis = spent, None, "spent so far"
    if projection is not None:
        total = projection.total_energy_j
        projected = max(total.value / 3.6e6 * per_kwh, spent)
        if total.low is not None and total.low / 3.6e6 * per_kwh > spent:
            lower, basis = total.low / 3.6e6 * per_kwh, "projection's lower bound"
    if lower <= budget.limit:
        return None
    return Verdict(budget, lower, projected, basis)

"""What every tracker sink receives (:class:`WindowMetrics`) and is (:class:`Sink`).

Metric names are the same in every tracker: ``greenml/WINDOW/energy_kwh``,
``greenml/WINDOW/power_w``, ``greenml/WINDOW/co2_kg``, ``greenml/WINDOW/cost_usd``
(``WINDOW`` is the window's name, ``epoch`` …, and the step is its index among
the windows of that name), and at the end the run's totals ``greenml/energy_kwh``,
``greenml/co2_kg``, ``greenml/cost_usd``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from greenml.errors import MissingExtra


@dataclass(frozen=True)
class WindowMetrics:
    """One finished window as trackers log it (carbon and cost ``None`` when unknown)."""

    name: str
    step: int
    end_s: float  # Unix time the window ended
    duration_s: float
    energy_kwh: float
    co2_kg: float | None
    cost_usd: float | None

    @property
    def power_w(self) -> float:
        return self.energy_kwh * 3.6e6 / self.duration_s if self.duration_s > 0 else 0.0

    def metrics(self) -> dict[str, float]:
        """``{"greenml/epoch/energy_kwh": …, …}``: only the figures that are known."""
        base = f"greenml/{self.name}"
        out = {f"{base}/energy_kwh": self.energy_kwh, f"{base}/power_w": self.power_w}
        if self.co2_kg is not None:
            out[f"{base}/co2_kg"] = self.co2_kg
        if self.cost_usd is not None:
            out[f"{base}/cost_usd"] = self.cost_usd
        return out


def totals(record: dict[str, Any]) -> dict[str, float]:
    """The run's ``greenml/energy_kwh``, ``greenml/co2_kg``, ``greenml/cost_usd`` (known ones)."""
    out: dict[str, float] = {}
    kwh = (record.get("energy") or {}).get("total_kwh")
    kg = (record.get("carbon") or {}).get("kg")
    usd = (record.get("cost") or {}).get("usd")
    for key, value in (("energy_kwh", kwh), ("co2_kg", kg), ("cost_usd", usd)):
        if isinstance(value, int | float):
            out[f"greenml/{key}"] = float(value)
    return out


@runtime_checkable
class Sink(Protocol):
    """Where a run's figures go. Calls come from one thread at a time; errors are caught."""

    name: str

    def log_windows(self, windows: Sequence[WindowMetrics]) -> None:
        """Log a batch of finished windows."""
        ...

    def finish(self, record: dict[str, Any] | None, statement: str | None) -> None:
        """Log the totals, the run record (an artifact) and the impact statement; close."""
        ...


def require(module: str, extra: str, feature: str) -> Any:
    """Import ``module`` or raise :class:`MissingExtra` naming ``pip install 'greenml[extra]'``."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(feature, extra, exc) from None

"""What every tracker sink receives (:class:`WindowMetrics`) and is (:class:`Sink`).

Metric names are the same in every tracker: ``greenml/WINDOW/energy_kwh``,
``greenml/WINDOW/power_w``, ``greenml/WINDOW/co2_kg``, ``greenml/WINDOW/cost_usd``
(``WINDOW`` is the window's name, ``epoch`` …, and the step is its index among
the windows of that name), and at the end the run's totals ``greenml/energy_kwh``,
``greenml/co2_kg``, ``greenml/cost_usd``. Each figure with a known uncertainty has
it beside it, as an absolute ± in the same unit: ``…/energy_kwh_uncertainty``,
``greenml/co2_kg_uncertainty``, ``greenml/cost_usd_uncertainty``. Every tracker also
gets the greenml run id (:data:`RUN_ID_TAG`), so a tracker run leads back to the record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from greenml.errors import MissingExtra

RUN_ID_TAG = "greenml.run_id"
"""The tag (MLflow), config key (W&B) or text (TensorBoard) holding the greenml run id."""


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
    energy_uncertainty_rel: float | None = None  # of energy_kwh (the window's measurement)

    @property
    def power_w(self) -> float:
        return self.energy_kwh * 3.6e6 / self.duration_s if self.duration_s > 0 else 0.0

    def metrics(self) -> dict[str, float]:
        """``{"greenml/epoch/energy_kwh": …, …}``: only the figures that are known."""
        base = f"greenml/{self.name}"
        out = {f"{base}/energy_kwh": self.energy_kwh, f"{base}/power_w": self.power_w}
        if self.energy_uncertainty_rel is not None:
            out[f"{base}/energy_kwh_uncertainty"] = self.energy_kwh * self.energy_uncertainty_rel
        if self.co2_kg is not None:
            out[f"{base}/co2_kg"] = self.co2_kg
        if self.cost_usd is not None:
            out[f"{base}/cost_usd"] = self.cost_usd
        return out


def totals(record: dict[str, Any]) -> dict[str, float]:
    """The run's ``greenml/energy_kwh``, ``greenml/co2_kg``, ``greenml/cost_usd`` (known ones),
    each with its ``…_uncertainty`` (absolute, same unit) when the record states one."""
    out: dict[str, float] = {}
    for key, block, value_key in (("energy_kwh", "energy", "total_kwh"), ("co2_kg", "carbon", "kg"),
                                  ("cost_usd", "cost", "usd")):  # fmt: skip
        part = record.get(block) or {}
        value, rel = part.get(value_key), part.get("uncertainty_rel")
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[f"greenml/{key}"] = float(value)
            if isinstance(rel, int | float) and not isinstance(rel, bool):
                out[f"greenml/{key}_uncertainty"] = float(value) * float(rel)
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

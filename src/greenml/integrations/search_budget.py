"""Energy-aware hyperparameter search: when to stop a trial, and one job for the whole search.

Each trial is measured as a ``greenml.Run`` carrying the same ``job`` block
(``job_id`` the search, ``step_id`` the trial), so ``greenml jobs show SEARCH``,
``greenml report --job SEARCH --kind euaiact`` and the statement count every
trial — the pruned ones too (Strubell et al.: a model's cost is its search's).

A trial stops (:func:`judge`), after ``min_reports`` reports, when

- its projected total energy (or CO2), from :func:`greenml.run.projection.project`
  with its 95 % prediction interval, will exceed the budget **at the low end of
  that interval** — surely, not probably;
- or its recent gain per kilojoule — how much the objective improved over the
  last ``min_reports`` reports, divided by the energy they took — is below
  ``min_gain_per_kj``: the next joules are unlikely to buy much.

The Optuna pruner (:mod:`greenml.integrations.optuna`) and the Ray Tune
stopper (:mod:`greenml.integrations.ray_tune`) both ask :func:`judge`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from greenml.errors import ConfigError
from greenml.run.projection import Point, project

Direction = Literal["minimize", "maximize"]
ENERGY_KEY = "greenml_energy_j"
"""The metric a trial reports its energy so far under (Ray Tune results)."""


@dataclass(frozen=True)
class TrialBudget:
    """What a trial may spend, and how much it must gain per kilojoule."""

    max_energy_j: float | None = None
    max_co2_g: float | None = None
    min_gain_per_kj: float | None = None
    min_reports: int = 3
    direction: Direction = "maximize"

    def __post_init__(self) -> None:
        for name in ("max_energy_j", "max_co2_g", "min_gain_per_kj"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"{name} must be a finite number ≥ 0, got {value!r}")
        if self.min_reports < 2:
            raise ConfigError(f"min_reports must be at least 2, got {self.min_reports}")
        if self.direction not in ("minimize", "maximize"):
            raise ConfigError(f"direction must be minimize or maximize, not {self.direction!r}")


@dataclass(frozen=True)
class Decision:
    """Whether to stop the trial, and why (a line for the log and the record)."""

    stop: bool
    reason: str = ""


@dataclass
class TrialProgress:
    """One trial's reports: time, step, energy so far and the objective's value."""

    started_at: float
    points: list[Point] = field(default_factory=list)
    values: list[float] = field(default_factory=list)

    def add(self, step: float, energy_j: float, value: float, t: float | None = None) -> None:
        self.points.append(Point(time.time() if t is None else t, step, energy_j))
        self.values.append(value)


def judge(
    progress: TrialProgress, budget: TrialBudget, total_steps: float | None,
    g_per_kwh: float | None = None,
) -> Decision:  # fmt: skip
    """Stop the trial? Over budget surely (the projection's low end), or a poor gain per kJ."""
    points, values = progress.points, progress.values
    if len(points) < budget.min_reports:
        return Decision(False)
    over = _over_budget(progress, budget, total_steps, g_per_kwh)
    if over is not None:
        return Decision(True, over)
    if budget.min_gain_per_kj is not None:
        k = budget.min_reports - 1
        spent_kj = (points[-1].energy_j - points[-1 - k].energy_j) / 1e3
        sign = 1.0 if budget.direction == "maximize" else -1.0
        gain = sign * (values[-1] - values[-1 - k])
        if spent_kj > 0 and gain / spent_kj < budget.min_gain_per_kj:
            return Decision(True, f"gain {gain:.3g} over the last {k} reports for "
                            f"{spent_kj:.3g} kJ: {gain / spent_kj:.3g} per kJ, below "
                            f"{budget.min_gain_per_kj:.3g}")  # fmt: skip
    return Decision(False)


def _over_budget(
    progress: TrialProgress, budget: TrialBudget, total_steps: float | None,
    g_per_kwh: float | None,
) -> str | None:  # fmt: skip
    """Why the projection is surely over a budget (``None``: it is not, or cannot say)."""
    if total_steps is None or (budget.max_energy_j is None and budget.max_co2_g is None):
        return None
    proj = project(progress.points, total_steps, progress.started_at, g_per_kwh=g_per_kwh)
    if proj is None:
        return None
    energy, co2 = proj.total_energy_j, proj.co2_g
    cap_j = budget.max_energy_j
    if cap_j is not None and energy.low is not None and energy.low > cap_j:
        return (f"projected energy {_j(energy.value)} (95 % from {_j(energy.low)}) exceeds "
                f"the budget {_j(cap_j)}")  # fmt: skip
    cap_g = budget.max_co2_g
    if cap_g is not None and co2 is not None and co2.low is not None and co2.low > cap_g:
        return (f"projected {co2.value:.3g} g CO2eq (95 % from {co2.low:.3g} g) exceeds "
                f"the budget {cap_g:.3g} g")  # fmt: skip
    return None


def _j(joules: float) -> str:
    from greenml.quantities import energy

    return energy(joules)


class TrialMeter:
    """One trial measured as a ``greenml.Run`` of the search's job.

    Args:
        search: The search's job id (``greenml jobs show SEARCH``).
        trial: The trial's number or id (the job's ``step_id``).
        run_options: Passed to ``greenml.Run`` (``zone``, ``ci``, ``db`` …).
    """

    def __init__(self, search: str, trial: str | int, **run_options: Any) -> None:
        from greenml.run.inprocess import Run

        if not search:
            raise ConfigError("the search needs a name: its trials are kept as one job")
        self.search, self.trial = search, str(trial)
        self.stopped_because: str | None = None
        tags = {"greenml.search": search, "greenml.trial": self.trial,
                **run_options.pop("tags", {})}  # fmt: skip
        self.run = Run(f"{search}/trial-{self.trial}", tags=tags, job=self._job_block(),
                       **run_options)  # fmt: skip
        self.run.start()
        self.progress = TrialProgress(time.time())

    def _job_block(self) -> dict[str, Any]:
        return {"job_id": self.search, "source": "option", "step_id": f"trial-{self.trial}",
                "job_name": self.search, "node_rank": 0}  # fmt: skip

    def energy_j(self) -> float:
        """The trial's energy so far (0 when the run could not measure)."""
        meter = self.run.meter
        return meter.peek_window("run").total_j if meter is not None else 0.0

    def g_per_kwh(self) -> float | None:
        """The run's effective intensity so far (``None``: not known)."""
        meter = self.run.meter
        if meter is None:
            return None
        spent = meter.peek_window("run")
        kg = self.run.carbon_kg(spent)
        return None if kg is None or spent.total_kwh <= 0 else kg * 1e3 / spent.total_kwh

    def report(self, step: float, value: float) -> None:
        """Record a report: the step, the energy so far, the objective's value."""
        self.progress.add(step, self.energy_j(), value)

    def finish(self, status: str = "completed") -> Any:
        """Stop and store the trial's run; its record (``None`` when not stored)."""
        return self.run.stop(status=status, exit_code=0 if status == "completed" else 1)


def stop_reasons(meters: Sequence[TrialMeter]) -> dict[str, str]:
    """trial → why it was stopped, for the trials greenml stopped."""
    return {m.trial: m.stopped_because for m in meters if m.stopped_because}

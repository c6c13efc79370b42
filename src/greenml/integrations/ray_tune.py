"""Stop Ray Tune trials whose energy or CO2 will exceed their budget.

The trainable measures itself as a greenml run of the search's job and judges
each result with the budget; a trial over it ends itself, so its run — with the
energy it spent — is stored under the job like the others::

    budget = TrialBudget(max_energy_j=50e3)

    def trainable(config):
        trial = tune.get_context().get_trial_id()
        with measure_trial("hpo-1", trial, budget=budget, total_steps=20, ci=350) as m:
            for step in range(20):
                score = train_one_epoch(config)
                tune.report(m.result({"score": score}, "score"))
                if m.stopped_because:
                    break

:class:`EnergyStopper` makes the same decision in the driver, from the
``greenml_energy_j`` a trainable reports with ``m.metrics()``, for a trainable
that does not judge itself. Tune then ends the trial's process at once, so
that trial's run is not stored: prefer the trainable's own check when the
reports must count the whole search. The rule is
:func:`greenml.integrations.search_budget.judge`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ray import tune

from greenml.integrations.search_budget import (
    ENERGY_KEY,
    TrialBudget,
    TrialMeter,
    TrialProgress,
    judge,
)

log = logging.getLogger("greenml")


class TuneTrial(TrialMeter):
    """A trial measured inside its trainable; judged on each result when given a budget."""

    budget: TrialBudget | None = None
    total_steps: int | None = None

    def metrics(self) -> dict[str, float]:
        """The figures the stopper reads, to add to each ``tune.report``."""
        return {ENERGY_KEY: self.energy_j()}

    def result(self, metrics: dict[str, Any], metric: str) -> dict[str, Any]:
        """``metrics`` with the trial's energy; judged against the budget (``stopped_because``)."""
        energy = self.energy_j()
        self.progress.add(len(self.progress.points) + 1, energy, float(metrics[metric]))
        out = {**metrics, ENERGY_KEY: energy}
        if self.budget is not None and self.stopped_because is None:
            decision = judge(self.progress, self.budget, self.total_steps, self.g_per_kwh())
            if decision.stop:
                self.stopped_because = decision.reason
                log.info("greenml: trial %s stopped: %s", self.trial, decision.reason)
        if self.stopped_because:
            out["greenml_stopped"] = self.stopped_because
        return out


@contextmanager
def measure_trial(
    search: str, trial_id: str, *, budget: TrialBudget | None = None,
    total_steps: int | None = None, **run_options: Any,
) -> Iterator[TuneTrial]:  # fmt: skip
    """Measure a Ray Tune trial (inside the trainable) as a greenml run of job ``search``."""
    meter = TuneTrial(search, trial_id, **run_options)
    meter.budget, meter.total_steps = budget, total_steps
    status = "completed"
    try:
        yield meter
    except BaseException:
        status = "interrupted"
        raise
    finally:
        meter.finish("interrupted" if meter.stopped_because else status)


class EnergyStopper(tune.Stopper):  # type: ignore[misc]  # ray is untyped
    """Stops a trial on projected energy/CO2 over budget or a poor gain per kJ.

    Args:
        metric: The objective the trial reports.
        budget: The per-trial budget (``direction`` as the search's mode).
        total_steps: The iterations a trial runs when not stopped.
        g_per_kwh: Intensity for a CO2 budget (the driver does not measure).
    """

    def __init__(self, metric: str, budget: TrialBudget, total_steps: int | None = None,
                 g_per_kwh: float | None = None) -> None:  # fmt: skip
        self.metric, self.budget, self.total_steps = metric, budget, total_steps
        self.g_per_kwh = g_per_kwh
        self.trials: dict[str, TrialProgress] = {}
        self.stopped: dict[str, str] = {}

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        if ENERGY_KEY not in result or self.metric not in result:
            return False
        progress = self.trials.setdefault(trial_id, TrialProgress(time.time()))
        step = float(result.get("training_iteration", len(progress.points) + 1))
        progress.add(step, float(result[ENERGY_KEY]), float(result[self.metric]))
        decision = judge(progress, self.budget, self.total_steps, self.g_per_kwh)
        if decision.stop:
            self.stopped[trial_id] = decision.reason
            log.info("greenml: trial %s stopped: %s", trial_id, decision.reason)
        return decision.stop

    def stop_all(self) -> bool:
        return False

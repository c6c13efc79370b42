"""A Ray Tune stopper that stops a trial whose energy or CO2 will exceed its budget.

The trainable measures itself and reports its energy with each result::

    def trainable(config):
        with measure_trial("hpo-1", tune.get_context().get_trial_id(), ci=350) as m:
            for step in range(20):
                score = train_one_epoch(config)
                tune.report({"score": score, **m.metrics()})

    stopper = EnergyStopper("score", TrialBudget(max_energy_j=50e3), total_steps=20)
    tune.Tuner(trainable, run_config=tune.RunConfig(stop=stopper), ...).fit()

The rule is :func:`greenml.integrations.search_budget.judge`; the stopper runs in
the driver and reads the ``greenml_energy_j`` the trainable reported. Every
trial's run is stored under the job ``hpo-1``, so the reports count the search.
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


class _Reporting(TrialMeter):
    def metrics(self) -> dict[str, float]:
        """The figures the stopper reads, to add to each ``tune.report``."""
        return {ENERGY_KEY: self.energy_j()}


@contextmanager
def measure_trial(search: str, trial_id: str, **run_options: Any) -> Iterator[_Reporting]:
    """Measure a Ray Tune trial (inside the trainable) as a greenml run of job ``search``."""
    meter = _Reporting(search, trial_id, **run_options)
    status = "completed"
    try:
        yield meter
    except BaseException:
        status = "interrupted"
        raise
    finally:
        meter.finish(status)


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

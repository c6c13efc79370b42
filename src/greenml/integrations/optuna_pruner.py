"""An Optuna pruner that stops a trial whose energy or CO2 will exceed its budget.

::

    pruner = EnergyPruner("hpo-resnet", TrialBudget(max_energy_j=50e3), total_steps=20,
                          wrapped=optuna.pruners.MedianPruner(), ci=350)
    study = optuna.create_study(direction="maximize", pruner=pruner)

    def objective(trial):
        with pruner.measure(trial):          # the trial is a greenml run of job hpo-resnet
            for step in range(20):
                score = train_one_epoch(...)
                trial.report(score, step)
                if trial.should_prune():
                    raise optuna.TrialPruned()
        return score

The rule is :func:`greenml.integrations.search_budget.judge`; ``wrapped`` (any
Optuna pruner) is asked as well. Why a trial was stopped is in its user
attribute ``greenml_stopped``; every trial's run is in the store under the job.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import optuna

from greenml.integrations.search_budget import TrialBudget, TrialMeter, judge

log = logging.getLogger("greenml")


class EnergyPruner(optuna.pruners.BasePruner):
    """Prunes on projected energy/CO2 over budget or a poor gain per kJ; else asks ``wrapped``.

    Args:
        search: The search's name: every trial's run is kept under this job id.
        budget: The per-trial budget (its ``direction`` must be the study's).
        total_steps: The steps a trial runs when not stopped (for the projection).
        wrapped: Another Optuna pruner asked too (``None``: energy only).
        run_options: Passed to ``greenml.Run`` for each trial (``ci``, ``zone``, ``db`` …).
    """

    def __init__(
        self, search: str, budget: TrialBudget, total_steps: int | None = None,
        wrapped: optuna.pruners.BasePruner | None = None, **run_options: Any,
    ) -> None:  # fmt: skip
        self.search, self.budget, self.total_steps = search, budget, total_steps
        self.wrapped = wrapped
        self.run_options = run_options
        self.meters: dict[int, TrialMeter] = {}

    @contextmanager
    def measure(self, trial: optuna.Trial) -> Iterator[TrialMeter]:
        """Measure the trial as a greenml run; its status follows how the trial ended."""
        meter = TrialMeter(self.search, trial.number, **dict(self.run_options))
        self.meters[trial.number] = meter
        status = "completed"
        try:
            yield meter
        except optuna.TrialPruned:
            status = "interrupted"
            raise
        except BaseException:
            status = "failed"
            raise
        finally:
            if meter.stopped_because:
                trial.set_user_attr("greenml_stopped", meter.stopped_because)
            record = meter.finish(status)
            if record is not None:
                trial.set_user_attr("greenml_run", record.id)
                trial.set_user_attr("greenml_energy_j", record.energy.total_j)

    def prune(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> bool:
        step = trial.last_step
        meter = self.meters.get(trial.number)
        if meter is not None and step is not None:
            meter.report(step + 1, float(trial.intermediate_values[step]))
            decision = judge(meter.progress, self.budget, self.total_steps, meter.g_per_kwh())
            if decision.stop:
                meter.stopped_because = decision.reason
                log.info("greenml: trial %s stopped: %s", trial.number, decision.reason)
                return True
        return bool(self.wrapped.prune(study, trial)) if self.wrapped is not None else False

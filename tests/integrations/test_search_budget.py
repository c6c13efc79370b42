"""Energy-aware hyperparameter search: the stopping rule, and real Optuna on scikit-learn.

Two kinds of trial train the same SGD classifier on the digits: a cheap one
(one pass over the data a step) and a costly one (80 passes a step). With a
per-trial budget between the two, the costly trials are pruned once their
projection is surely over it; every trial, pruned or not, is one run of the
search's job, so the EU AI Act report over the job counts them all.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from greenml.errors import ConfigError
from greenml.integrations.search_budget import TrialBudget, TrialProgress, judge

optuna = pytest.importorskip("optuna")
sklearn_datasets = pytest.importorskip("sklearn.datasets")

STEPS = 12


def _progress(energies: list[float], values: list[float]) -> TrialProgress:
    p = TrialProgress(started_at=0.0)
    for i, (e, v) in enumerate(zip(energies, values, strict=True)):
        p.add(i + 1, e, v, t=float(i + 1))
    return p


def test_a_trial_surely_over_its_energy_budget_is_stopped_not_one_within_noise() -> None:
    steady = _progress([10.0, 20.0, 30.0, 40.0], [0.1, 0.2, 0.3, 0.4])
    over = judge(steady, TrialBudget(max_energy_j=80.0), total_steps=10)
    assert over.stop and "exceeds the budget" in over.reason  # 100 J projected, surely > 80
    assert not judge(steady, TrialBudget(max_energy_j=120.0), total_steps=10).stop
    noisy = _progress([10.0, 12.0, 40.0, 42.0], [0.1, 0.2, 0.3, 0.4])
    assert not judge(noisy, TrialBudget(max_energy_j=90.0), total_steps=10).stop  # low end < 90
    co2 = judge(steady, TrialBudget(max_co2_g=0.005), total_steps=10, g_per_kwh=400.0)
    assert co2.stop and "CO2eq" in co2.reason  # 100 J at 400 g/kWh: 0.011 g


def test_a_poor_gain_per_kilojoule_stops_a_trial() -> None:
    flat = _progress([1e3, 2e3, 3e3], [0.50, 0.501, 0.502])
    assert judge(flat, TrialBudget(min_gain_per_kj=0.01), None).stop
    rising = _progress([1e3, 2e3, 3e3], [0.50, 0.55, 0.60])
    assert not judge(rising, TrialBudget(min_gain_per_kj=0.01), None).stop
    falling_loss = _progress([1e3, 2e3, 3e3], [0.9, 0.8, 0.7])
    assert not judge(falling_loss, TrialBudget(min_gain_per_kj=0.01, direction="minimize"),
                     None).stop  # fmt: skip


@given(
    energies=st.lists(st.floats(0, 1e9), min_size=2, max_size=8),
    budget=st.floats(0, 1e9),
)
def test_judge_never_stops_a_trial_that_spends_below_its_budget_at_the_end(
    energies: list[float], budget: float
) -> None:
    cumulative = sorted(energies)
    progress = _progress(cumulative, [0.0] * len(cumulative))
    decision = judge(progress, TrialBudget(max_energy_j=budget, min_reports=2), len(cumulative))
    if cumulative[-1] <= budget:  # all the steps are done: nothing is projected beyond
        assert not decision.stop


@pytest.mark.parametrize("bad", [{"max_energy_j": -1.0}, {"max_co2_g": float("nan")},
                                 {"min_reports": 1}, {"direction": "up"}])  # fmt: skip
def test_a_bad_budget_is_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        TrialBudget(**bad)  # type: ignore[arg-type]


def test_optuna_prunes_the_costly_trials_and_the_job_counts_every_trial(tmp_path: Path) -> None:
    from sklearn.linear_model import SGDClassifier

    from greenml.cli.app import cli
    from greenml.integrations.optuna_pruner import EnergyPruner

    x, y = sklearn_datasets.load_digits(return_X_y=True)
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    pruner = EnergyPruner("hpo-digits", TrialBudget(max_energy_j=25.0), total_steps=STEPS,
                          ci=300, db=db, sample_hz=5)  # fmt: skip
    study = optuna.create_study(direction="maximize", pruner=pruner)
    for passes in (1, 80, 1, 80):
        study.enqueue_trial({"passes": passes})

    def objective(trial: optuna.Trial) -> float:
        passes = trial.suggest_categorical("passes", [1, 80])
        model = SGDClassifier(random_state=0)
        score = 0.0
        with pruner.measure(trial):
            for step in range(STEPS):
                for _ in range(passes):
                    model.partial_fit(x, y, classes=list(range(10)))
                score = float(model.score(x, y))
                trial.report(score, step)
                if trial.should_prune():
                    raise optuna.TrialPruned()
        return score

    study.optimize(objective, n_trials=4)
    states = {t.number: (t.params["passes"], t.state.name) for t in study.trials}
    assert states == {0: (1, "COMPLETE"), 1: (80, "PRUNED"), 2: (1, "COMPLETE"),
                      3: (80, "PRUNED")}, [t.user_attrs for t in study.trials]  # fmt: skip
    for t in study.trials:
        assert t.user_attrs["greenml_run"]
        if t.state.name == "PRUNED":
            assert "exceeds the budget" in t.user_attrs["greenml_stopped"]
            assert t.last_step is not None and t.last_step < STEPS - 1
    # one job: the report over it counts every trial, the pruned ones too
    out = CliRunner().invoke(cli, ["report", "--job", "hpo-digits", "--kind", "euaiact",
                                   "--format", "json", "--db", db])  # fmt: skip
    assert out.exit_code == 0, out.output
    text = json.dumps(json.loads(out.stdout))
    assert "It covers 4 runs" in text
    assert "2 completed, 2 interrupted" in text

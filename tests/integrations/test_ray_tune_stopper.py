"""The energy stopper on real Ray Tune: two trials of a scikit-learn model, one far costlier.

The trainable measures itself as a greenml run of the job ``tune-digits`` and
reports its energy with each result; the stopper (in the driver) stops the
costly trial once its projection is surely over the per-trial budget.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from greenml.integrations.search_budget import TrialBudget

ray = pytest.importorskip("ray")
tune = pytest.importorskip("ray.tune")
STEPS = 8
# Ray's start and a trial's actor take seconds each; on a loaded machine, minutes
pytestmark = pytest.mark.timeout(600)


def test_the_stopper_reads_the_energy_the_trainable_reports() -> None:
    """The stopper alone, fed the results a trainable reports (no cluster needed)."""
    from greenml.integrations.ray_tune import EnergyStopper

    stopper = EnergyStopper("score", TrialBudget(max_energy_j=50.0), total_steps=10)
    cheap = [stopper("a", {"score": 0.1 * i, "greenml_energy_j": 2.0 * i,
                           "training_iteration": i}) for i in range(1, 11)]  # fmt: skip
    costly = [stopper("b", {"score": 0.1 * i, "greenml_energy_j": 10.0 * i,
                            "training_iteration": i}) for i in range(1, 5)]  # fmt: skip
    assert not any(cheap)
    assert costly == [False, False, True, True]  # 100 J projected from the third report
    assert list(stopper.stopped) == ["b"]
    assert not stopper("c", {"score": 1.0})  # a result without energy is never judged


@pytest.fixture
def local_ray() -> Iterator[None]:
    """A one-node local Ray with 2 CPUs, no dashboard; shut down after."""
    from tests.integrations.ray_cluster import local_ray_cluster

    with local_ray_cluster(workers=0, head_cpus=2):
        yield


def _trainable(config: dict[str, Any]) -> None:
    from sklearn.datasets import load_digits
    from sklearn.linear_model import SGDClassifier

    from greenml.integrations.ray_tune import measure_trial

    x, y = load_digits(return_X_y=True)
    model = SGDClassifier(random_state=0)
    trial_id = tune.get_context().get_trial_id()
    with measure_trial("tune-digits", trial_id, budget=TrialBudget(max_energy_j=20.0),
                       total_steps=STEPS, ci=300, db=config["db"], sample_hz=5) as m:  # fmt: skip
        for _ in range(STEPS):
            for _ in range(config["passes"]):
                model.partial_fit(x, y, classes=list(range(10)))
            tune.report(m.result({"score": float(model.score(x, y))}, "score"))
            if m.stopped_because:
                break


def test_the_costly_trial_ends_itself_and_both_are_runs_of_one_job(
    local_ray: None, tmp_path: Path
) -> None:
    from greenml.store import open_store
    from greenml.store.jobs import job_runs

    db = f"sqlite:///{tmp_path / 'runs.db'}"
    tuner = tune.Tuner(
        _trainable,
        param_space={"passes": tune.grid_search([1, 80]), "db": db},
        tune_config=tune.TuneConfig(max_concurrent_trials=1),
        run_config=tune.RunConfig(storage_path=str(tmp_path / "ray"), verbose=0),
    )
    results = tuner.fit()
    by_passes = {r.config["passes"]: r for r in results}
    assert by_passes[1].metrics["training_iteration"] == STEPS
    assert "greenml_stopped" not in by_passes[1].metrics
    assert by_passes[80].metrics["training_iteration"] < STEPS
    assert "exceeds the budget" in by_passes[80].metrics["greenml_stopped"]
    with open_store(db) as store:
        runs = {r.status: r for r in job_runs(store, "tune-digits")}
    assert set(runs) == {"completed", "interrupted"}  # the stopped trial's energy is kept too
    assert all(r.energy.total_j > 0 for r in runs.values())

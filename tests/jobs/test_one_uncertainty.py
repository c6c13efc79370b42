"""One job, one uncertainty: ``jobs show`` and ``report --job`` combine errors by one rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from greenml.jobs.summary import summarize_job
from greenml.measure.combine import combine
from greenml.report.runset import load_runs
from greenml.store import open_store
from greenml.store.jobs import job_runs
from tests.helpers import greenml_cli
from tests.jobs.builders import node_run


def _four_nodes(db: str, **kw: object) -> list[str]:
    with open_store(db) as store:
        return [
            node_run(store, {"job_id": "j4", "node": f"n{r}", "node_rank": r,
                             "expected_nodes": 4}, gpu_j=[1000.0], uncertainty_rel=0.5,
                     carbon_kg=0.1, location="DE", cost_usd=0.2, **kw)  # type: ignore[arg-type]
            for r in range(4)
        ]  # fmt: skip


def test_one_job_one_uncertainty(tmp_path: Path) -> None:
    # Four nodes measured by one model (±50 % each): the model's error is shared, so the
    # job's energy is ±50 % in `jobs show` and in `report --job`, not ±25 % in one of them.
    db = str(tmp_path / "r.db")
    ids = _four_nodes(db)
    with open_store(db) as store:
        summary = summarize_job("j4", job_runs(store, "j4"))
        runs = load_runs(store, ids)
    assert summary.energy["uncertainty_rel"] == pytest.approx(0.5)
    assert runs.it_energy.uncertainty_rel == pytest.approx(0.5)
    shown = greenml_cli("jobs", "show", "j4", "--db", db)
    assert shown.returncode == 0, shown.stderr
    assert "±50 %" in shown.stdout and "±25 %" not in shown.stdout
    # job carbon and cost carry their ±
    assert summary.carbon["uncertainty_rel"] is not None
    assert summary.cost["uncertainty_rel"] is not None
    assert "carbon: 400 g CO2eq ±" in shown.stdout.replace("0.400 kg", "400 g")
    as_json = json.loads(greenml_cli("jobs", "show", "j4", "--json", "--db", db).stdout)
    assert as_json["energy"]["uncertainty_rel"] == pytest.approx(0.5)


def test_combine_adds_a_shared_source_linearly_and_others_in_quadrature() -> None:
    assert combine([("cpu", 10.0), ("cpu", 10.0)]) == pytest.approx(20.0)
    assert combine([("cpu", 10.0), ("gpu", 10.0)]) == pytest.approx(200**0.5)
    assert combine([("a", 3.0), ("a", 1.0), ("b", 3.0)]) == pytest.approx(5.0)
    assert combine([]) == 0.0

"""greenml.integrations.ray on a local Ray cluster: a head and a worker node on this machine."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from greenml.cli import main
from tests.integrations.ray_cluster import local_ray_cluster
from tests.integrations.ray_sensors import GPU_W, node_sensors

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A local head and one worker node."""
    with local_ray_cluster(workers=1) as c:
        yield c


def _work(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_tasks_share_their_nodes_energy_and_the_job_is_stored(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    from greenml.integrations.ray import RayEnergy

    monkeypatch.setenv("GREENML_LEDGER", str(tmp_path / "ledger.jsonl"))
    db = f"sqlite:///{tmp_path / 'ray.db'}"
    energy = RayEnergy(sensors=node_sensors, sample_hz=20, db_url=db, name="batch")
    with energy:
        work = energy.remote(_work, num_cpus=1)
        assert sum(ray.get([work.remote(0.3) for _ in range(8)])) == pytest.approx(2.4)
        time.sleep(0.3)
    report = energy.report
    assert report is not None and len(report.nodes) == 2 and len(report.tasks) == 8
    for node in report.nodes:  # a node's energy: its tasks' shares and its idle energy
        shares = sum(t.energy_j for t in report.tasks if t.node_id == node["node_id"])
        assert shares + node["idle_j"] == pytest.approx(node["energy_j"], rel=0.05)
        assert node["energy_j"] == pytest.approx(GPU_W * node["duration_s"], rel=0.05)
    for task in report.tasks:  # 0.3 s at 200 W, shared with the other tasks in flight
        assert 0 < task.energy_j <= GPU_W * (task.end_s - task.start_s) * 1.05
    assert main(["jobs", "show", report.job_id, "--db", db, "--json"]) == 0
    job = json.loads(capsys.readouterr().out)
    assert job["sources"] == ["ray"] and job["expected_nodes"] == 2 and job["missing_nodes"] == []
    assert job["energy"]["total_j"] == pytest.approx(report.total_j)

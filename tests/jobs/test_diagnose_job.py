"""greenml diagnose --job on stored node runs: stragglers by node, scaling, what is left out."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from greenml.cli import main
from greenml.diagnose.job import diagnose_job
from greenml.measure.measurement import ComponentEnergy, DeviceEnergy, Measurement
from greenml.store.repository import Store
from tests.jobs.builders import T0, node_run


def _step(rank: int, i: int, duration_s: float) -> Measurement:
    gpu = ComponentEnergy({f"gpu@rank{rank}": DeviceEnergy(300.0 * duration_s, "counter", 0.05,
                                                           f"rank{rank}")})  # fmt: skip
    started = datetime.fromtimestamp(T0 + i, tz=timezone.utc)
    return Measurement(f"step/rank{rank}", started, duration_s, {"gpu": gpu})


def _job(job_id: str, rank: int, nodes: int) -> dict[str, object]:
    return {"job_id": job_id, "node": f"{job_id}-n{rank}", "node_rank": rank,
            "expected_nodes": nodes, "job_name": "llm"}  # fmt: skip


def test_the_critical_path_is_named_with_its_node(store: Store) -> None:
    for rank in range(3):
        run_id = node_run(store, _job("big", rank, 3), gpu_j=[1000.0])
        slow = 2.0 if rank == 1 else 1.0
        store.add_windows(run_id, [_step(r, i, 0.1 * slow) for r in (2 * rank, 2 * rank + 1)
                                   for i in range(4)])  # fmt: skip
    found = diagnose_job(store, "big").to_dict()
    s = found["stragglers"]
    assert s["critical_node"] == "big-n1" and s["critical_rank"] in (2, 3) and s["steps"] == 4
    # every other rank waits 0.1 s per step at 300 W: 4 ranks x 4 steps x 30 J
    assert s["wait_energy_j"] == pytest.approx(4 * 4 * 30.0)
    assert {r["rank"]: r["node"] for r in s["ranks"]}[5] == "big-n2"


def test_scaling_against_the_same_job_at_other_node_counts(store: Store) -> None:
    # 2 nodes: 200 s; 4 nodes: 120 s (speedup 1.67, efficiency 83 %); same work
    for rank in range(2):
        node_run(store, _job("two", rank, 2), gpu_j=[1000.0], duration_s=200, progress_total=1e6)
    for rank in range(4):
        node_run(store, _job("four", rank, 4), gpu_j=[600.0], start_s=1000, duration_s=120,
                 progress_total=1e6)  # fmt: skip
    found = diagnose_job(store, "four").to_dict()
    rows = {r["nodes"]: r for r in found["scaling"]["rows"]}
    assert found["scaling"]["baseline_nodes"] == 2
    assert rows[4]["speedup"] == pytest.approx(200 / 120)
    assert rows[4]["efficiency"] == pytest.approx(200 / 120 / 2)
    assert rows[4]["energy_per_work_j"] == pytest.approx(2400.0 / 1e6)
    assert rows[4]["energy_ratio"] == pytest.approx(2400.0 / 2000.0)
    assert "no cross-node straggler analysis" in " ".join(found["notes"])


def test_a_job_with_a_missing_node_is_not_a_scaling_point(store: Store) -> None:
    node_run(store, _job("two", 0, 2), gpu_j=[1.0], duration_s=200)  # node 1 never reported
    for rank in range(4):
        node_run(store, _job("four", rank, 4), gpu_j=[1.0], start_s=1000, duration_s=120)
    found = diagnose_job(store, "four").to_dict()
    assert found["scaling"] is None
    assert any("ran at one node count only" in n for n in found["notes"])


def test_diagnose_job_on_the_command_line(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from greenml.store import open_store

    with open_store(db_url) as store:
        node_run(store, _job("j", 0, 2), gpu_j=[1.0])
    assert main(["diagnose", "--job", "j", "--db", db_url, "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["problems"] == ["1 of 2 expected node(s) never reported (node ranks 1)"]
    assert main(["diagnose", "--db", db_url]) == 2
    assert "give a RUN_ID or --job ID" in capsys.readouterr().err
    assert main(["diagnose", "--job", "nope", "--db", db_url]) == 3  # not found
    assert "no run belongs to job 'nope'" in capsys.readouterr().err

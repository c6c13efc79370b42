"""Spot-tolerant batch inference on a local Ray cluster: a worker crashes, a node is removed."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from greenml.cli import main
from tests.integrations.ray_cluster import local_ray_cluster
from tests.integrations.ray_sensors import node_sensors

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A head and one worker node (2 CPUs each); the last test removes the worker."""
    with local_ray_cluster(workers=1) as c:
        yield c


def _crash_once(marker: str, items: list[int]) -> list[int]:
    """Square each item; the first attempt of the block holding 7 kills its worker process."""
    if 7 in items and not os.path.exists(marker):
        Path(marker).write_text("crashed")
        time.sleep(0.2)
        os._exit(1)
    time.sleep(0.1)
    return [i * i for i in items]


def _slow(started_dir: str, items: list[int]) -> list[str]:
    """Say which node runs this block, then take a second per block."""
    node = ray.get_runtime_context().get_node_id()
    (Path(started_dir) / f"{node}-{uuid.uuid4().hex}").touch()
    time.sleep(1.0)
    return [f"item-{i}" for i in items]


def test_a_crashed_worker_s_block_is_resubmitted_and_its_energy_counted_as_wasted(
    cluster: Any, tmp_path: Path
) -> None:
    from greenml.integrations.ray import RayEnergy
    from greenml.integrations.ray_batch import run_batch_inference

    energy = RayEnergy(sensors=node_sensors, sample_hz=20, store=False)
    out = run_batch_inference(
        list(range(20)), partial(_crash_once, str(tmp_path / "crashed")), block_size=4,
        energy=energy, price_per_kwh_usd=0.2, ray_max_retries=0,  # the driver resubmits
    )  # fmt: skip
    assert out.results == [i * i for i in range(20)]
    report = out.report
    assert (report.items, report.blocks, report.duplicate_finishes) == (20, 5, 0)
    assert report.retries == report.resubmissions == 1 and report.attempts == 6
    lost = [a for a in out.attempts if not a.finished]
    assert [a.block_id for a in lost] == [1]
    assert report.wasted_method == "attributed" and report.estimated_attempts == 0
    assert report.wasted_energy_j is not None and report.wasted_energy_j > 0
    assert report.useful_energy_j is not None and report.energy_per_item_j is not None
    assert report.energy_per_item_j > 0
    assert report.energy_j == pytest.approx(report.useful_energy_j + report.wasted_energy_j)
    assert report.energy_j <= (report.node_energy_j or 0.0) * 1.001  # shares of the nodes' energy
    assert report.cost_per_item_usd == pytest.approx(report.energy_per_item_j / 3.6e6 * 0.2)
    assert report.method == "attributed (counter)" and report.uncertainty_rel is not None


def _one_short(items: list[int]) -> list[int]:
    return items[1:]


def _bad_item(items: list[int]) -> list[int]:
    if 3 in items:
        raise ValueError("item 3 is malformed")
    return items


def test_the_user_s_errors_are_not_retried_and_a_wrong_count_is_refused(cluster: Any) -> None:
    from greenml.errors import ConfigError
    from greenml.integrations.ray_batch import run_batch_inference

    with pytest.raises(ConfigError, match="returned 1 results for a block of 2 items"):
        run_batch_inference([1, 2], _one_short, block_size=2)
    with pytest.raises(ValueError, match="item 3 is malformed"):  # Ray's error wraps the user's
        run_batch_inference(list(range(6)), _bad_item, block_size=2)
    with pytest.raises(ConfigError, match="block_size"):
        run_batch_inference([1], _one_short, block_size=0)
    out = run_batch_inference([], _one_short, block_size=3, instance_usd_per_hour=1.0)
    assert out.results == [] and out.report.blocks == 0 and out.report.cost_per_item_usd is None


def test_a_removed_node_s_blocks_run_elsewhere_and_each_item_comes_back_once(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    from greenml.integrations.ray import RayEnergy
    from greenml.integrations.ray_batch import run_batch_inference

    monkeypatch.setenv("GREENML_LEDGER", str(tmp_path / "ledger.jsonl"))
    db = f"sqlite:///{tmp_path / 'ray.db'}"
    (worker,) = cluster.worker_nodes
    started = tmp_path / "started"
    started.mkdir()

    def preempt() -> None:  # the spot node goes once one of its blocks is running
        deadline = time.time() + 30
        while not any(p.name.startswith(worker.node_id) for p in started.iterdir()):
            if time.time() > deadline:
                return
            time.sleep(0.05)
        time.sleep(0.6)  # its meter reports (every 0.25 s) cover part of the lost attempt
        cluster.remove_node(worker)

    killer = threading.Thread(target=preempt)
    killer.start()
    energy = RayEnergy(sensors=node_sensors, sample_hz=20, db_url=db, name="spot-batch",
                       progress_s=0.25)  # fmt: skip
    items = list(range(30))
    out = run_batch_inference(items, partial(_slow, str(started)), block_size=5, energy=energy,
                              instance_usd_per_hour=3.6)  # fmt: skip
    killer.join()
    assert out.results == [f"item-{i}" for i in items]  # each once, in order
    report = out.report
    assert report.retries > 0 and report.lost_nodes == (worker.node_id,)
    lost = [a for a in out.attempts if a.node_id == worker.node_id and not a.kept]
    assert lost and all(not a.finished and (a.energy_j or 0) > 0 for a in lost)
    assert report.energy_per_item_j is not None and report.energy_per_item_j > 0
    assert report.wasted_energy_j == pytest.approx(sum(a.energy_j or 0 for a in lost))
    # the dead node's meter reported every 0.25 s: most of the waste is measured, the rest
    # (from its last report to the retry) estimated and said so
    assert report.estimated_energy_j < report.wasted_energy_j
    assert report.wasted_method in ("attributed", "attributed + estimated")
    assert energy.report is not None
    (dead,) = [n for n in energy.report.nodes if n["lost"]]
    assert dead["node_id"] == worker.node_id and dead["energy_j"] > 0
    kept = {a.block_id for a in out.attempts if a.kept}
    assert kept == set(range(6)) and sum(a.kept for a in out.attempts) == 6
    assert report.cost_method is not None and report.cost_method.startswith("2 nodes")
    assert main(["jobs", "show", str(report.job_id), "--db", db, "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()  # Ray's raylet may print a line first
    job = json.loads("\n".join(lines[lines.index("{") :]))
    assert job["expected_nodes"] == 2 and len(job["nodes"]) == 1 and job["missing_nodes"]

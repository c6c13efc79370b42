"""greenml on a real four-node Slurm 22.05 (see tests/slurm/cluster.py): every job shape."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from tests.slurm.cluster import Cluster

pytestmark = pytest.mark.slow

GREENML = f"{sys.executable} -m greenml"


def _srun_job(cluster: Cluster, body: str, *options: str) -> str:
    script = f"#!/bin/sh\nexport GREENML_DB='{cluster.db_url}'\n{body}\n"
    job = cluster.sbatch(script, *options)
    cluster.wait_done(job)
    return job


def test_a_plain_job_is_four_nodes_of_one_step_and_compared_with_sacct(cluster: Cluster) -> None:
    job = _srun_job(cluster, f'srun -N4 -n4 {GREENML} run -q --gpus none --sample-hz 5 '
                    f'--job "$SLURM_JOB_ID" -- sleep 2', "-N4", "--job-name=plain")
    cluster.wait_sacct(job)
    data = cluster.job_json(job)
    assert [(n["node"], n["node_rank"], n["step_id"], n["counted"]) for n in data["nodes"]] == [
        (f"node{i}", i, "0", True) for i in range(4)]  # fmt: skip
    assert data["expected_nodes"] == 4 and data["missing_count"] == 0
    assert data["job_name"] == "plain", data
    assert data["energy"]["total_j"] > 0 and data["problems"] == []
    (sacct,) = data["second_sources"]  # --job given: still a Slurm job, compared with sacct
    assert sacct["source"].startswith("slurm sacct"), sacct


def _prolog_job(cluster: Cluster, body: str = "sleep 2", *options: str) -> str:
    job = cluster.sbatch(f"#!/bin/sh\nexport GREENML_DB='{cluster.db_url}'\n{body}\n", *options)
    cluster.wait_done(job)
    return job


def _runs(data: dict[str, object]) -> list[tuple[object, ...]]:
    nodes = data["nodes"]
    assert isinstance(nodes, list)
    return [(n["node"], n["node_rank"], n["step_id"], n["scope"], n["status"], n["counted"])
            for n in nodes]  # fmt: skip


def test_the_prolog_measures_every_node_with_its_rank_name_and_store(prolog: Cluster) -> None:
    job = _prolog_job(prolog, "sleep 2", "-N4", "--job-name=prolog-alone")
    prolog.wait_sacct(job)
    data = prolog.job_json(job)
    assert _runs(data) == [(f"node{i}", i, None, "allocation", "completed", True)
                           for i in range(4)]  # fmt: skip
    assert data["job_name"] == "prolog-alone" and data["expected_nodes"] == 4
    assert data["problems"] == [] and data["energy"]["total_j"] > 0
    (sacct,) = data["second_sources"]
    assert sacct["status"] == "ok" and "whole allocation" in sacct["scope"], sacct
    log = prolog.prolog_log()
    for node in ("node0", "node1", "node2", "node3"):
        assert f"job {job} on {node}: greenml run started" in log
    assert f"storing to {prolog.db_url}" in log and "LOST" not in log


def test_settings_written_with_export_reach_greenml_too(prolog: Cluster) -> None:
    db = prolog.root / "greenml" / "exported.db"
    with prolog.settings(export=True, GREENML_DB=f"sqlite:///{db}"):
        job = _prolog_job(prolog, "sleep 1", "-N2")
    data = json.loads(prolog.greenml("jobs", "show", job, "--db", f"sqlite:///{db}", "--json",
                                     "--no-sacct"))  # fmt: skip
    assert [n["node"] for n in data["nodes"]] == ["node0", "node1"]


def test_prolog_and_in_script_srun_count_each_node_once(prolog: Cluster) -> None:
    job = _prolog_job(prolog, f'srun -N4 -n4 {GREENML} run -q --gpus none --sample-hz 5 '
                      f'--job "$SLURM_JOB_ID" -- sleep 2', "-N4")
    data = prolog.job_json(job, "--no-sacct")
    runs = _runs(data)
    assert len(runs) == 8 and data["seen_nodes"] == 4 and data["expected_nodes"] == 4
    assert [r for r in runs if r[5]] == [(f"node{i}", i, None, "allocation", "completed", True)
                                         for i in range(4)]  # fmt: skip
    inner = [n for n in data["nodes"] if not n["counted"]]
    assert [n["step_id"] for n in inner] == ["0"] * 4
    assert all("whole allocation" in n["not_counted_why"] for n in inner)
    assert data["energy"]["status"] == "ok" and data["energy"]["total_j"] > 0
    assert data["problems"] == [] and data["conflicts"] == []


def test_two_steps_with_job_given_are_two_steps_not_a_conflict(cluster: Cluster) -> None:
    run = f'srun -N4 -n4 {GREENML} run -q --gpus none --sample-hz 5 --job "$SLURM_JOB_ID"'
    job = _srun_job(cluster, f"{run} -- sleep 1\n{run} -- sleep 1", "-N4", "--job-name=steps")
    data = cluster.job_json(job, "--no-sacct")
    assert [(n["step_id"], n["node_rank"]) for n in data["nodes"]] == [
        (step, rank) for step in ("0", "1") for rank in range(4)]  # fmt: skip
    assert all(n["counted"] for n in data["nodes"]) and data["conflicts"] == []
    assert data["problems"] == [] and data["energy"]["total_j"] > 0
    shown = cluster.greenml("jobs", "show", job, "--db", cluster.db_url, "--no-sacct")
    rows = [line.split()[0] for line in shown.splitlines()[3:11]]
    assert shown.splitlines()[1].startswith("step") and rows == ["0"] * 4 + ["1"] * 4, shown


def test_a_narrow_step_then_a_wide_one_is_neither_missing_nodes_nor_elastic(
    cluster: Cluster,
) -> None:
    run = f"{GREENML} run -q --gpus none --sample-hz 5 -- sleep 1"
    job = _srun_job(cluster, f"srun -N2 -n2 {run}\nsrun -N4 -n4 {run}", "-N4")
    data = cluster.job_json(job, "--no-sacct")
    assert [(n["step_id"], n["node_rank"]) for n in data["nodes"]] == [
        ("0", 0), ("0", 1), ("1", 0), ("1", 1), ("1", 2), ("1", 3)]  # fmt: skip
    assert data["elastic"] is None and data["missing_count"] == 0 and data["problems"] == []
    assert data["expected_nodes"] == 4 and data["seen_nodes"] == 4


def test_an_array_is_stored_by_task_and_found_by_task_or_array(cluster: Cluster) -> None:
    run = f"srun -N2 -n2 {GREENML} run -q --gpus none --sample-hz 5 -- sleep 2"
    array = _srun_job(cluster, run, "-N2", "--array=0-1", "--job-name=sweep")
    cluster.wait_sacct(array)
    task = cluster.job_json(f"{array}_0")
    deadline = time.monotonic() + 30  # slurmdbd writes a task's own rows a moment later
    while task["second_sources"][0]["status"] != "ok" and time.monotonic() < deadline:
        time.sleep(1)
        task = cluster.job_json(f"{array}_0")
    assert {(n["array_task_id"], n["node_rank"]) for n in task["nodes"]} == {("0", 0), ("0", 1)}
    assert task["job_name"] == "sweep" and task["problems"] == []
    (sacct,) = task["second_sources"]
    assert sacct["status"] == "ok", sacct  # the task's own sacct rows, by its raw job id
    assert [p["job_id"] for p in sacct["parts"]] == [task["nodes"][0]["job_id"]]
    whole = cluster.job_json(array)
    assert sorted({n["array_task_id"] for n in whole["nodes"]}) == ["0", "1"]
    assert len(whole["nodes"]) == 4 and whole["expected_nodes"] == 4 and whole["problems"] == []
    assert whole["second_sources"][0]["status"] == "ok"
    assert len(whole["second_sources"][0]["parts"]) == 2


def test_a_cancelled_job_is_flagged_and_its_runs_are_not_completed(prolog: Cluster) -> None:
    job = prolog.sbatch("#!/bin/sh\nsleep 60\n", "-N2")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and prolog.prolog_log().count(f"job {job} on") < 2:
        time.sleep(0.2)
    time.sleep(1)
    prolog.run("scancel", job)
    prolog.wait_done(job)
    prolog.wait_sacct(job)
    data = prolog.job_json(job)
    assert [n["status"] for n in data["nodes"]] == ["interrupted", "interrupted"], data
    assert data["state"] == "CANCELLED"
    assert any("cancelled" in p for p in data["problems"]), data["problems"]


def test_a_hung_greenml_is_stopped_when_the_epilog_gives_up(prolog: Cluster) -> None:
    hung = prolog.root / "hung-greenml.sh"
    hung.write_text("#!/bin/sh\ntrap '' TERM\nwhile :; do sleep 1; done\n")  # ignores the stop
    hung.chmod(0o755)
    with prolog.settings(GREENML_BIN=str(hung), GREENML_EPILOG_WAIT_S="1"):
        job = _prolog_job(prolog, "sleep 1", "-N1")
    log = prolog.prolog_log()
    assert f"job {job} on node0: greenml (pid" in log and "stopping its session" in log
    pid = int(log.split(f"job {job} on node0: greenml run started (pid ")[1].split(",")[0])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.1)  # killed: gone once init has reaped it
    assert not Path(f"/proc/{pid}").exists()


def test_a_start_that_fails_is_logged_as_lost_never_silent(prolog: Cluster) -> None:
    with prolog.settings(GREENML_BIN=str(prolog.root / "no-such-greenml")):
        job = _prolog_job(prolog, "sleep 1", "-N1")
    lost = [line for line in prolog.prolog_log().splitlines()
            if f"job {job} on node0: LOST" in line]  # fmt: skip
    assert lost and "no-such-greenml" in "".join(lost), prolog.prolog_log()


def test_every_prolog_job_stores_every_node_run(prolog: Cluster) -> None:
    """Many four-node jobs at once (GREENML_SLURM_PROLOG_JOBS, default 6): no run lost."""
    count = int(os.environ.get("GREENML_SLURM_PROLOG_JOBS", "6"))
    jobs = [prolog.sbatch(f"#!/bin/sh\nsleep {1 + i % 3}\n", "-N4") for i in range(count)]
    for job in jobs:
        prolog.wait_done(job, timeout=60 + 10 * count)
    stored: list[str] = []
    for job in jobs:
        data = prolog.job_json(job, "--no-sacct")
        stored += [n["status"] for n in data["nodes"] if n["scope"] == "allocation"]
    print(f"node runs stored / expected over {count} prolog jobs: {len(stored)} / {4 * count} "
          f"({stored.count('completed')} completed)")
    mine = [line for line in prolog.prolog_log().splitlines()
            if any(f"job {job} on " in line for job in jobs)]  # fmt: skip
    assert stored == ["completed"] * 4 * count, mine
    assert not [line for line in mine if "LOST" in line]

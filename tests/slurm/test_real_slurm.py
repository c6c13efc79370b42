"""greenml on a real four-node Slurm 22.05 (see tests/slurm/cluster.py): every job shape."""

from __future__ import annotations

import json
import sys

import pytest

from tests.slurm.cluster import Cluster

pytestmark = pytest.mark.slow

GREENML = f"{sys.executable} -m greenml"


def _srun_job(cluster: Cluster, body: str, *options: str) -> str:
    script = f"#!/bin/sh\nexport GREENML_DB={cluster.db_url}\n{body}\n"
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
    job = cluster.sbatch(f"#!/bin/sh\nexport GREENML_DB={cluster.db_url}\n{body}\n", *options)
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

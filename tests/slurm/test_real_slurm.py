"""greenml on a real four-node Slurm 22.05 (see tests/slurm/cluster.py): every job shape."""

from __future__ import annotations

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

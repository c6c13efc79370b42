"""Four nodes of one job as four processes: each ``greenml run`` on its own fake GPUs.

The nodes run at once against one store (SQLite, then a real PostgreSQL), find their
identity in Slurm's variables, and publish per-rank ``step`` windows. Node 2 is the
straggler; node 1's GPUs draw half the power of the others.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from greenml.cli import main

REPO = Path(__file__).resolve().parents[2]
POWER_W = {0: 300.0, 1: 150.0, 2: 300.0, 3: 300.0}


def _node_env(rank: int, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "GREENML_"))}
    env.update(
        PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO)]),
        SLURM_JOB_ID="4242", SLURM_STEP_ID="0", SLURM_NODEID=str(rank),
        SLURM_JOB_NUM_NODES="4", SLURMD_NODENAME=f"gpu-node-{rank}", SLURM_JOB_NAME="bert",
        GREENML_LEDGER=str(tmp_path / "ledger.jsonl"),
    )  # fmt: skip
    env.pop("CUDA_VISIBLE_DEVICES", None)
    return env


def _run_nodes(db_url: str, tmp_path: Path) -> None:
    procs = []
    for rank, power in POWER_W.items():
        argv = ["run", "-q", "--db", db_url, "--no-cpu", "--sample-hz", "20",
                "--json-out", str(tmp_path / f"node{rank}.json"), "--",
                sys.executable, "-m", "tests.jobs._train", str(rank), "2",
                "1.5" if rank == 2 else "1.0"]  # fmt: skip
        spec = {"node": f"gpu-node-{rank}", "gpus_w": [power, power], "argv": argv}
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "tests.jobs._node", json.dumps(spec)], cwd=REPO,
            env=_node_env(rank, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        ))  # fmt: skip
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, out + err


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_four_node_processes_are_one_job(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _run_nodes(db_url, tmp_path)
    records = [json.loads((tmp_path / f"node{r}.json").read_text()) for r in range(4)]
    assert [r["job"]["source"] for r in records] == ["slurm"] * 4
    assert [r["job"]["node_rank"] for r in records] == [0, 1, 2, 3]
    assert records[2]["job"]["node"] == "gpu-node-2" and records[2]["job"]["step_id"] == "0"

    job = _json(["jobs", "show", "4242", "--db", db_url, "--json", "--no-sacct"], capsys)
    assert job["expected_nodes"] == 4 and job["missing_nodes"] == [] and job["problems"] == []
    by_rank = {n["node_rank"]: n for n in job["nodes"]}
    assert {n["run_id"] for n in job["nodes"]} == {r["id"] for r in records}
    assert job["energy"]["total_j"] == pytest.approx(sum(r["energy"]["total_j"] for r in records))
    for rank, power in POWER_W.items():  # two GPUs at constant power over the node's run
        node = by_rank[rank]
        assert sorted(node["devices"]) == ["gpu0", "gpu1"]
        expected = 2 * power * records[rank]["duration_s"]
        assert node["energy_j"] == pytest.approx(expected, rel=0.15)

    found = _json(["diagnose", "--job", "4242", "--db", db_url, "--json"], capsys)
    s = found["stragglers"]
    assert s["critical_rank"] in (4, 5) and s["critical_node"] == "gpu-node-2"
    assert s["critical_node_rank"] == 2 and s["steps"] == 6 and s["wait_energy_j"] > 0
    assert [(o["node"], o["gauge"]) for o in found["outliers"]] == [("gpu-node-1", "gpu_power_w")]

"""The Slurm prolog and epilog of deploy/slurm, run as slurmd would on two of three nodes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from greenml.cli import main

REPO = Path(__file__).resolve().parents[2]
SLURM = REPO / "deploy" / "slurm"


def _env(tmp_path: Path, node: str, db_url: str) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    scontrol = bin_dir / "scontrol"  # `scontrol show hostnames LIST`, as Slurm expands it
    scontrol.write_text("#!/bin/sh\nprintf 'gpu-a\\ngpu-b\\ngpu-c\\n'\n")
    scontrol.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "GREENML_"))}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env['PATH']}",
        PYTHONPATH=str(REPO / "src"),
        SLURM_JOB_ID="5151", SLURM_JOB_NODELIST="gpu-[a-c]", SLURMD_NODENAME=node,
        SLURM_JOB_NAME="resnet", GREENML_BIN=f"{sys.executable} -m greenml",
        GREENML_RUN_OPTIONS=f"--gpus none --sample-hz 5 --db {db_url}",
        GREENML_STATE_DIR=str(tmp_path / node), GREENML_LEDGER=str(tmp_path / "ledger.jsonl"),
    )  # fmt: skip
    return env


def _script(name: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    path = SLURM / f"greenml-{name}.sh"
    return subprocess.run(["sh", str(path)], env=env, capture_output=True, text=True, timeout=60)


def test_prolog_and_epilog_measure_each_node_of_the_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db_url = f"sqlite:///{tmp_path / 'slurm.db'}"  # the scripts do not care which store
    nodes = ("gpu-a", "gpu-c")  # gpu-b never ran greenml: it must show as missing
    for node in nodes:
        done = _script("prolog", _env(tmp_path, node, db_url))
        assert done.returncode == 0, done.stderr
    time.sleep(1.5)
    for node in nodes:
        done = _script("epilog", _env(tmp_path, node, db_url))
        assert done.returncode == 0, done.stderr
        assert not (tmp_path / node / "5151").exists()
    assert main(["jobs", "show", "5151", "--db", db_url, "--json", "--no-sacct"]) == 0
    job = json.loads(capsys.readouterr().out)
    assert [(n["node"], n["node_rank"], n["status"]) for n in job["nodes"]] == [
        ("gpu-a", 0, "completed"), ("gpu-c", 2, "completed")]  # fmt: skip
    assert job["expected_nodes"] == 3 and job["missing_nodes"] == [1]
    assert job["job_name"] == "resnet" and job["span"]["wall_s"] >= 1.0


def test_the_epilog_of_a_job_greenml_never_saw_exits_0(tmp_path: Path) -> None:
    env = _env(tmp_path, "gpu-a", "sqlite:///unused.db")
    done = _script("epilog", env)
    assert done.returncode == 0 and done.stderr == ""

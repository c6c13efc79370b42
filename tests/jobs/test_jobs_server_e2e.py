"""Four nodes of a five-node job send their runs to a real team server process.

Each node is a process running ``greenml run --server URL`` on its own fake GPUs
and its own local store (as on a real node); a fifth node never reports. Then
``greenml jobs show ID --json --server URL`` (and ``jobs list``) read the job back
from the server: four nodes whose energy adds up to the runs each node stored,
the fifth flagged missing. The server runs on SQLite and on a real PostgreSQL.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from greenml.cli import main
from greenml.store import access, open_store

pytest.importorskip("uvicorn")

from tests.server.live import LiveServer, free_port

REPO = Path(__file__).resolve().parents[2]
POWER_W = {0: 300.0, 1: 150.0, 2: 300.0, 3: 250.0}  # rank 4 of 5 never reports


@pytest.fixture
def team(db_url: str, tmp_path: Path) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    with open_store(db_url) as store:
        tokens = {p: access.create_token(store, p, "write") for p in ("ml", "other")}
    server = LiveServer(db_url, free_port(), tmp_path / "server.log").start()
    yield server, tokens
    server.stop()


def _node_env(rank: int, tmp_path: Path, server: LiveServer, token: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "GREENML_"))}
    env.update(
        PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO)]),
        SLURM_JOB_ID="777", SLURM_STEP_ID="0", SLURM_NODEID=str(rank), SLURM_JOB_NUM_NODES="5",
        SLURMD_NODENAME=f"gpu-node-{rank}", SLURM_JOB_NAME="llama",
        GREENML_TOKEN=token, GREENML_LEDGER=str(tmp_path / f"ledger{rank}.jsonl"),
        GREENML_SPOOL_DIR=str(tmp_path / f"spool{rank}"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
    )  # fmt: skip
    env.pop("CUDA_VISIBLE_DEVICES", None)
    return env


def _run_nodes(tmp_path: Path, server: LiveServer, token: str) -> list[dict[str, Any]]:
    procs = []
    for rank, power in POWER_W.items():
        argv = ["run", "-q", "--db", str(tmp_path / f"node{rank}.db"), "--server", server.url,
                "--no-cpu", "--sample-hz", "20", "--json-out", str(tmp_path / f"node{rank}.json"),
                "--", sys.executable, "-m", "tests.jobs._train", str(rank), "2", "1.0"]  # fmt: skip
        spec = {"node": f"gpu-node-{rank}", "gpus_w": [power, power], "argv": argv}
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "tests.jobs._node", json.dumps(spec)], cwd=REPO,
            env=_node_env(rank, tmp_path, server, token), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        ))  # fmt: skip
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, out + err
        assert "not sent" not in err and "refused" not in err, err
    return [json.loads((tmp_path / f"node{r}.json").read_text()) for r in POWER_W]


def by_rank_nodes(job: dict[str, Any]) -> set[str]:
    return {n["node"] for n in job["nodes"]}


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_four_nodes_through_the_server_are_one_job(
    team: tuple[LiveServer, dict[str, str]], tmp_path: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    server, tokens = team
    records = _run_nodes(tmp_path, server, tokens["ml"])
    monkeypatch.setenv("GREENML_TOKEN", tokens["ml"])
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("GREENML_SERVER", raising=False)

    code, out, err = _cli(["jobs", "show", "777", "--json", "--server", server.url], capsys)
    assert code == 0, err
    job = json.loads(out)
    assert job["job_id"] == "777" and job["job_name"] == "llama" and job["sources"] == ["slurm"]
    assert job["expected_nodes"] == 5 and job["seen_nodes"] == 4
    assert job["missing_nodes"] == [4] and job["missing_count"] == 1
    assert job["problems"] == ["1 of 5 expected node(s) of step 0 never reported (node ranks 4)"]
    by_rank = {n["node_rank"]: n for n in job["nodes"]}
    assert sorted(by_rank) == [0, 1, 2, 3]
    assert {n["run_id"] for n in job["nodes"]} == {r["id"] for r in records}
    for record in records:  # each node's figure is the one its node stored, summed exactly
        node = by_rank[record["job"]["node_rank"]]
        assert node["node"] == record["job"]["node"]
        assert node["energy_j"] == pytest.approx(record["energy"]["total_j"])
    assert job["energy"]["total_j"] == pytest.approx(sum(r["energy"]["total_j"] for r in records))
    for rank, power in POWER_W.items():  # and it is the fake GPUs' power x the node's duration
        expected = 2 * power * by_rank[rank]["duration_s"]
        assert by_rank[rank]["energy_j"] == pytest.approx(expected, rel=0.15)

    # the same JSON through GREENML_SERVER; the listing agrees with the job
    monkeypatch.setenv("GREENML_SERVER", server.url)
    code, out, _ = _cli(["jobs", "list", "--json"], capsys)
    listed = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [j["job_id"] for j in listed] == ["777"]
    assert listed[0]["energy"] == job["energy"] and listed[0]["missing_count"] == 1
    code, out, _ = _cli(["jobs", "show", "777"], capsys)
    assert code == 0 and "4 node(s) of 5 expected" in out and "gpu-node-3" in out

    # a team lead with only the server: runs, the job's diagnosis, the dashboard's job page
    code, out, err = _cli(["runs", "list", "--json"], capsys)
    assert code == 0, err
    assert {json.loads(line)["id"] for line in out.splitlines()} == {r["id"] for r in records}
    code, out, err = _cli(["diagnose", "--job", "777", "--json"], capsys)
    assert code == 0, err
    diagnosis = json.loads(out)
    assert diagnosis["energy"] == job["energy"] and diagnosis["nodes"] == 4
    assert diagnosis["problems"] == job["problems"]
    stragglers = diagnosis["stragglers"]
    assert stragglers is not None and stragglers["critical_node"] in by_rank_nodes(job)
    assert stragglers["wait_energy_j"] >= 0 and stragglers["steps"] > 0
    import httpx

    page = httpx.get(f"{server.url}/jobs/777", timeout=30,
                     headers={"Authorization": f"Bearer {tokens['ml']}"})  # fmt: skip
    assert page.status_code == 200, page.text[:300]
    assert "<h2>Diagnosis</h2>" in page.text and "critical path" in page.text
    assert f"rank {stragglers['critical_rank']} on node {stragglers['critical_node']}" in page.text
    assert "waiting energy" in page.text and "nodes out of line" in page.text
    code, out, err = _cli(["report", "--job", "777", "--format", "json"], capsys)
    assert code == 0, err
    statement = json.loads(out)["sections"][0]["paragraphs"][0]
    assert "(4 runs," in statement, statement
    assert "never reported" in err  # the job's problems, as with a store
    code, _, err = _cli(["runs", "list", "--db", str(tmp_path / "x.db"), "--server",
                         server.url], capsys)  # fmt: skip
    assert code == 2 and "pass one" in err

    # another project's token sees no such job; a bad token and a dead server are one line
    monkeypatch.setenv("GREENML_TOKEN", tokens["other"])
    code, out, err = _cli(["jobs", "show", "777", "--json"], capsys)
    assert code == 3 and out == "" and "404" in err and len(err.strip().splitlines()) == 1
    code, out, _ = _cli(["jobs", "list", "--json"], capsys)
    assert code == 0 and out == ""
    monkeypatch.setenv("GREENML_TOKEN", "gml_not_a_token")
    code, _, err = _cli(["jobs", "list"], capsys)
    assert code == 4 and "401" in err and len(err.strip().splitlines()) == 1
    server.stop()
    code, _, err = _cli(["jobs", "show", "777"], capsys)
    assert code == 7 and "unreachable" in err and "Traceback" not in err

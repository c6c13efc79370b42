"""examples/agent_workflow.py runs against the stand-in server, alone and as a greenml run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.llm_remote.conftest import require
from tests.llm_remote.standin import StandIn

require("openai")

ROOT = Path(__file__).resolve().parents[2]


def run_example(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src") + os.pathsep + str(ROOT),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "HOME": str(tmp_path),
        "GREENML_SPOOL_DIR": str(tmp_path / "spool"),
    }
    env.pop("GREENML_DB", None)
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / "agent_workflow.py"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_the_example_prints_measured_and_estimated_parts(standin: StandIn, tmp_path: Path) -> None:
    done = run_example(tmp_path, "--base-url", standin.url("energy") + "/v1", "--country", "US")
    assert done.returncode == 0, done.stderr
    assert "measured: 2 calls" in done.stdout and "estimated: 0 calls" in done.stdout
    assert "workflow agent-workflow: 2 model calls, 1 tool calls" in done.stderr


def test_the_example_as_a_run_is_stored(standin: StandIn, tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    done = run_example(
        tmp_path, "--base-url", standin.url("plain") + "/v1", "--db", str(db), "--ci", "300"
    )
    assert done.returncode == 0, done.stderr
    assert "estimated: 2 calls" in done.stdout and "--per workflow" in done.stdout
    run_id = done.stdout.split("run ", 1)[1].split(":", 1)[0]
    from greenml.store import open_store

    with open_store(str(db)) as store:
        block = store.get_run_record(run_id).workflow
    assert block is not None and block.estimated.calls == 2 and block.tool_calls == 1

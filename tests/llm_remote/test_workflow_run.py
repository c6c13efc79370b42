"""Model calls inside a real greenml.Run: stored in its record, and the SCI per workflow."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import greenml
from greenml.cli import main
from greenml.llm.remote import Workflow, instrument, tool
from greenml.measure.events import ENV_VAR
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from greenml.record.run_record import RunRecord
from greenml.store import open_store
from tests.llm_remote.conftest import require
from tests.llm_remote.standin import StandIn

openai = require("openai")
MESSAGES = [{"role": "user", "content": "plan the trip"}]


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("GREENML_DB", ENV_VAR, "GREENML_ZONE", "GREENML_CI", "GREENML_PUE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("GREENML_SPOOL_DIR", str(tmp_path / "spool"))


def agent(standin: StandIn) -> None:
    """Two measured calls through the 'proxy', one estimated call, one tool call."""
    proxied = instrument(
        openai.OpenAI(base_url=standin.url("energy") + "/v1", api_key="k"), country="US"
    )
    direct = instrument(
        openai.OpenAI(base_url=standin.url("plain") + "/v1", api_key="k"), country="FR"
    )
    proxied.chat.completions.create(model="llama-3.1-8b", messages=MESSAGES, max_tokens=10)
    with tool("search"):
        time.sleep(0.01)
    for _ in proxied.chat.completions.create(
        model="llama-3.1-8b", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    ):
        pass
    direct.chat.completions.create(model="llama-3.1-70b", messages=MESSAGES, max_tokens=20)


def test_calls_in_a_run_are_stored_and_the_sci_is_per_workflow(
    standin: StandIn, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "runs.db")
    ids = []
    for _ in range(2):  # two executions of the workflow
        sensor = FakeSensor([FakeDevice("gpu0", [(0, 50.0)])])
        with (
            greenml.Run("trip-agent", ci=300, db=db, sensors=[sensor], tick_s=0.05) as run,
            Workflow("inner", echo=False) as wf,
        ):
            agent(standin)
        assert run.record is not None
        ids.append(run.record.id)
    record = run.record
    block = record.workflow
    assert block is not None and block.calls == 3 and block.tool_calls == 1
    assert block.measured.calls == 2 and block.estimated.calls == 1
    assert block.measured.energy_j == pytest.approx((3 * 0.01 + 10 * 0.1) + (3 * 0.01 + 8 * 0.1))
    assert block.estimated.energy_j == pytest.approx(wf.total().estimated.energy_j)
    assert block.call_list is not None and [c["kind"] for c in block.call_list] == [
        "measured",
        "measured",
        "estimated",
    ]
    with open_store(db) as store:  # stored typed, read back byte for byte
        stored = store.get_record(record.id)
        assert stored == record.to_dict()
        assert RunRecord.from_dict(stored, strict=True).workflow == block

    assert (
        main(["report", *ids, "--kind", "sci", "--per", "workflow", "--format", "json", "--db", db])
        == 0
    )
    out, _ = capsys.readouterr()
    data = json.loads(out)["data"]
    assert data["r"] == 2 and data["functional_unit"] == "workflow"
    parts = data["workflow"]
    assert parts["measured"]["calls"] == 4 and parts["estimated"]["calls"] == 2
    calls_g = parts["measured"]["co2eq_g"] + parts["estimated"]["co2eq_g"]
    assert data["o_g"] == pytest.approx(parts["local_o_g"] + calls_g)
    assert parts["estimated"]["co2eq_g"] > 0 and parts["local_o_g"] > 0

    assert main(["report", *ids, "--kind", "sci", "--per", "workflow", "--db", db]) == 0
    text = capsys.readouterr().out
    assert "model calls, measured (4)" in text and "model calls, estimated (2)" in text
    assert "g per workflow" in text
    assert "plus 6 model calls" in text  # E and O say what they include


def test_per_workflow_without_workflow_blocks_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "runs.db")
    with greenml.Run(
        "plain", ci=300, db=db, sensors=[FakeSensor([FakeDevice("gpu0", [(0, 5.0)])])], tick_s=0.05
    ) as run:
        time.sleep(0.01)
    assert run.record is not None and run.record.workflow is None
    assert "workflow" not in run.record.to_dict()  # older readers see no new key
    capsys.readouterr()  # the Run's own one line of what it did
    code = main(["report", run.record.id, "--kind", "sci", "--per", "workflow", "--db", db])
    err = capsys.readouterr().err
    assert code == 2 and "no run here carries a workflow block" in err
    assert len(err.strip().splitlines()) == 1


def test_workflow_without_a_run_prints_and_returns_the_total(
    standin: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    with Workflow("solo") as wf:
        agent(standin)
    total = wf.total()
    assert total.measured.calls == 2 and total.estimated.calls == 1 and total.tool_calls == 1
    assert total.estimated.uncertainty_j > 0 and total.measured.uncertainty_j > 0
    err = capsys.readouterr().err
    assert "workflow solo: 3 model calls, 1 tool calls — measured" in err


def test_a_workflow_measures_local_compute_apart_from_the_calls(
    standin: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    from greenml.measure.meter import Meter

    sensor = FakeSensor([FakeDevice("gpu0", [(0, 100.0)])])
    with Meter(sensors=[sensor]) as meter, Workflow("local", meter=meter) as wf:
        agent(standin)
        time.sleep(0.05)
    total = wf.total()
    assert total.local_energy_j is not None and total.local_energy_j > 100.0 * 0.04
    assert total.local_method is not None
    assert total.energy_j == pytest.approx(
        total.measured.energy_j + total.estimated.energy_j + total.local_energy_j
    )
    assert "local compute" in capsys.readouterr().err


AGENT_SCRIPT = """
import sys, time
import openai
from greenml.llm.remote import instrument, tool
proxied = instrument(openai.OpenAI(base_url=sys.argv[1] + "/v1", api_key="k"), country="US")
direct = instrument(openai.OpenAI(base_url=sys.argv[2] + "/v1", api_key="k"), country="FR")
m = [{"role": "user", "content": "plan the trip"}]
proxied.chat.completions.create(model="llama-3.1-8b", messages=m, max_tokens=10)
with tool("search"):
    time.sleep(0.01)
direct.chat.completions.create(model="llama-3.1-70b", messages=m, max_tokens=20)
print("agent done")
"""


def test_calls_of_a_program_under_greenml_run_reach_its_record(
    standin: StandIn, tmp_path: Path
) -> None:
    import os
    import subprocess
    import sys

    script = tmp_path / "agent.py"
    script.write_text(AGENT_SCRIPT)
    db = tmp_path / "runs.db"
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    out = subprocess.run(
        [sys.executable, "-m", "greenml", "run", "-q", "--db", str(db), "--ci", "300", "--",
         sys.executable, str(script), standin.url("energy"), standin.url("plain")],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "agent done"  # the program's output, unchanged
    with open_store(str(db)) as store:
        (row,) = store.list_runs(limit=0)
        record = RunRecord.from_dict(store.get_record(row["id"]), strict=True)
    block = record.workflow
    assert block is not None and block.calls == 2 and block.tool_calls == 1
    assert block.measured.calls == 1 and block.estimated.calls == 1
    assert block.measured.energy_j == pytest.approx(3 * 0.01 + 10 * 0.1)
    assert block.tool_seconds >= 0.01

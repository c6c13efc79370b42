"""The agent's decisions: its config file, the job table, bounds, holds and restores."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from greenml.agent.audit import Peer, read_audit
from greenml.agent.client import AgentClient
from greenml.agent.config import Bounds, load_config
from greenml.agent.jobs import JobTable, cgroup_job
from greenml.errors import AgentRefused, ConfigError
from tests.agent.conftest import LocalAgent
from tests.agent.fake_node import UUIDS

ALICE = Peer(os.getpid(), 1000, 1000)


def test_the_config_file_is_read_with_its_bounds_and_policy(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text('[agent]\nsocket = "/x.sock"\nrequests_per_s = 20\n[policy]\nclocks = false\n'
                    'require_job = false\n[policy.users]\nalice = [0, 1]\n[[bounds]]\n'
                    'model = "H100"\nmin_power_w = 300\n')  # fmt: skip
    os.chmod(path, 0o644)
    config = load_config(path)
    assert config.socket == Path("/x.sock") and config.requests_per_s == 20.0
    assert not config.clocks and not config.require_job and config.users == {"alice": (0, 1)}
    assert config.bounds_for("NVIDIA H100 80GB HBM3") == Bounds("H100", min_power_w=300.0)
    assert config.bounds_for("Tesla V100") == Bounds()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[agent]\nshell = 'sh'\n", "has no key 'shell'"),
        ("[policy]\nclocks = 'yes'\n", "true or false"),
        ("[[bounds]]\nmin_power_w = 1\n", "needs a model"),
        ("[agent]\nmax_message_bytes = 10\n", "max_message_bytes >= 256"),
        ("[danger]\n", "unknown table"),
    ],
)
def test_a_bad_config_is_refused_in_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(text)
    os.chmod(path, 0o644)
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_a_config_others_may_write_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text("")
    os.chmod(path, 0o666)
    with pytest.raises(ConfigError, match="writable by root only"):
        load_config(path)


def test_a_token_works_only_for_its_user_and_its_job_cgroup(tmp_path: Path) -> None:
    jobs = JobTable(tmp_path / "jobs.json")
    token = jobs.start("41", 1000, [1])
    proc = tmp_path / "proc"
    (proc / "500").mkdir(parents=True)
    (proc / "500" / "cgroup").write_text("0::/system.slice/slurmstepd.scope/job_41/step_0\n")
    (proc / "600").mkdir()
    (proc / "600" / "cgroup").write_text("0::/system.slice/slurmstepd.scope/job_42/step_0\n")
    assert jobs.authenticate(token, 1000, 500, proc).gpus == (1,)
    with pytest.raises(AgentRefused, match="another user"):
        jobs.authenticate(token, 1001, 500, proc)
    with pytest.raises(AgentRefused, match="runs in job 42, not in job 41"):
        jobs.authenticate(token, 1000, 600, proc)
    with pytest.raises(AgentRefused, match="already belongs to job 41"):
        jobs.start("42", 1001, [1])
    assert JobTable(tmp_path / "jobs.json").authenticate(token, 1000, 500, proc).job == "41"
    assert (tmp_path / "jobs.json").stat().st_mode & 0o777 == 0o600
    assert token not in (tmp_path / "jobs.json").read_text()  # only its hash is kept
    assert cgroup_job(tmp_path / "nope") is None


def _job(local: LocalAgent, uid: int, gpus: list[int]) -> str:
    answer = local.agent.server.respond(
        Peer(os.getpid(), 0, 0), 1,
        f'{{"v":1,"op":"job_start","args":{{"job":"7","uid":{uid},"gpus":{gpus}}}}}'.encode(),
    )  # fmt: skip
    assert answer["ok"], answer
    return str(answer["result"]["token"])  # type: ignore[index]


def test_bounds_refuse_a_limit_the_gpu_would_take(served: LocalAgent, tmp_path: Path) -> None:
    served.agent.service.config = type(served.config)(
        **{**served.config.__dict__, "bounds": (Bounds("V100", min_power_w=150.0),)}
    )
    token = _job(served, ALICE.uid, [1])
    def line(gpu: int) -> bytes:
        return json.dumps({"v": 1, "op": "set_power_limit", "token": token,
                           "args": {"gpu": gpu, "watts": 120, "why": "try"}}).encode()  # fmt: skip

    answer = served.agent.server.respond(ALICE, 3, line(0))
    assert answer["refused"] == "120 W is outside the allowed 150–250 W for Tesla V100-PCIE-32GB"
    other = served.agent.server.respond(ALICE, 3, line(1))
    assert other["refused"] == "gpu1 is not one of the 1 GPU(s) of job 7"
    assert served.nvml._stored_limits() == {}
    last = read_audit(served.config.audit_log)[-1]
    assert last["who"]["uid"] == 1000 and last["why"] == "try" and last["to"] == 120.0


def test_a_change_held_by_a_connection_is_undone_when_it_closes(served: LocalAgent) -> None:
    token = _job(served, 0, [0, 1])
    with AgentClient(served.config.socket, token=token) as client:
        done = client.request("set_power_limit", gpu=1, watts=180.0, why="test")
        assert done == {"gpu": "gpu1", "uuid": UUIDS[1], "from_w": 250.0, "to_w": 180.0}
        locked = client.request("lock_clocks", gpu=1, mhz=1000.0)
        assert locked["to_mhz"] == 990 and served.nvml.locks[UUIDS[1]] == (990, 990)
        assert served.nvml._stored_limits()[UUIDS[1]] == 180.0
    deadline = time.monotonic() + 10
    while served.nvml._stored_limits()[UUIDS[1]] != 250.0 or served.nvml.locks:
        assert time.monotonic() < deadline, "not restored after the client left"
        time.sleep(0.05)
    restored = [e for e in read_audit(served.config.audit_log) if e["outcome"] == "restored"]
    assert {e["why"] for e in restored} == {"client disconnected"}
    assert {(e["what"], e["from"], e["to"]) for e in restored} == {
        ("power_limit", 180.0, 250.0), ("clocks", 990, "unlocked")}


def test_without_an_agent_nothing_changes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from greenml.agent.probe import probe_agent
    from greenml.measure.sensors.discover import discover_cpu_sensors
    from tests.fakes.fake_sysfs import FakeMachine

    machine = FakeMachine(tmp_path / "root", vendor="GenuineIntel")
    monkeypatch.setenv("GREENML_AGENT_SOCKET", str(tmp_path / "no-agent.sock"))
    assert probe_agent() == []
    sensors, notes = discover_cpu_sensors(root=machine.root)
    assert [type(s).__name__ for s in sensors] == ["CpuModelSensor", "DramModelSensor"]
    assert notes == [f"RAPL not used: no RAPL domains under {machine.root}/sys/class/powercap"]
    monkeypatch.setenv("GREENML_AGENT_SOCKET", "off")
    assert probe_agent() == []


def test_a_second_agent_on_the_same_state_is_refused(tmp_path: Path, short_dir: Path) -> None:
    from tests.agent.conftest import local_agent

    first = local_agent(tmp_path, short_dir)
    try:
        with pytest.raises(ConfigError, match="another greenml agent runs"):
            local_agent(tmp_path / "again", short_dir, state_dir=tmp_path / "state")
        assert first.config.socket.is_socket()  # the first one's socket is untouched
    finally:
        first.agent.close()


def test_the_shipped_config_and_slurm_lines_parse() -> None:
    import subprocess

    deploy = Path(__file__).resolve().parents[2] / "deploy" / "agent"
    config = load_config(deploy / "agent.toml", check_owner=False)
    assert config.require_job and config.bounds_for("NVIDIA H100 80GB HBM3").min_power_w == 350
    for script in ("slurm-prolog.sh", "slurm-epilog.sh"):
        checked = subprocess.run(["sh", "-n", str(deploy / script)], capture_output=True)
        assert checked.returncode == 0, checked.stderr


def test_the_controls_go_through_the_agent_for_a_user_who_is_not_root(
    served: LocalAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Routing only (the agent sees this process as root; users are tested in test_users)."""
    import greenml.agent.client as client_module
    from greenml.agent.control import AgentClockControl, AgentGpuControl, open_clocks
    from greenml.optimize.power_limit import open_power_control
    from greenml.optimize.straggler.runtime import open_gpu_control

    monkeypatch.setenv("GREENML_AGENT_SOCKET", str(served.config.socket))
    monkeypatch.setattr(client_module.os, "geteuid", lambda: 1000)
    controls = [open_power_control([1]), open_gpu_control([1], None, None), open_clocks([1])]
    try:
        assert [type(c) for c in controls] == [AgentGpuControl, AgentGpuControl, AgentClockControl]
        assert [c.keys for c in controls] == [["gpu1"]] * 3
        assert controls[1].get("gpu1").uuid == UUIDS[1]
    finally:
        for control in controls:
            control.close()
    monkeypatch.setattr(client_module.os, "geteuid", lambda: 0)  # root: the libraries directly
    assert type(open_gpu_control([1], served.nvml, None)).__name__ == "GpuControl"

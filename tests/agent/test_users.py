"""The agent as root, its clients as real unprivileged users (``useradd``), on a fake node.

RAPL's ``energy_uj`` files are root's (0400), the GPUs are fakes whose limits live in a
file (as one machine's GPUs), and every client runs in its own process as its own user
through ``runuser``: what the kernel says about them (``SO_PEERCRED``) is what they are.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.fake_node import UUIDS
from tests.agent.harness import Node, can_make_users, real_user
from tests.optimize.fake_gpus import expected_choice

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not can_make_users() and os.environ.get("CI") != "true",
        reason="needs root, useradd and runuser (real users for the agent's clients)",
    ),
]

NO_TOKEN = (
    "no job token: only a job's processes may change its GPUs (GREENML_AGENT_TOKEN, or the "
    "token file the job's prolog wrote)"
)
BOUNDS = '[[bounds]]\nmodel = "V100"\nmin_power_w = 150\nmax_power_w = 250\n'


@pytest.fixture
def node() -> Iterator[Node]:
    made = Node(config=BOUNDS)
    try:
        yield made
    finally:
        made.close()


METER_AS_USER = """
import json, sys
from pathlib import Path
try:
    Path(sys.argv[1]).read_text()
    direct = "read"
except PermissionError:
    direct = "denied"
from greenml.measure.meter import Meter
from greenml.measure.sensors.discover import discover_cpu_sensors
sensors, notes = discover_cpu_sensors()
meter = Meter(sensors=sensors, sample_hz=0)
meter.begin_window("w")
print("ready", flush=True)
sys.stdin.readline()
m = meter.end_window("w")
cpu = m.components["cpu"].devices["cpu0"]
meter.close()
print(json.dumps({"direct": direct, "energy_j": cpu.energy_j, "method": cpu.method,
                  "note": [d.note for s in sensors for d in s.devices], "notes": notes}))
"""


def test_an_unprivileged_user_gets_counter_measured_cpu_energy(node: Node) -> None:
    node.start()
    with real_user() as alice:
        python = node.user_command(alice, ["-c", METER_AS_USER, str(node.package / "energy_uj")])
        with subprocess.Popen(python, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=node.dir) as proc:  # fmt: skip
            assert proc.stdout is not None and proc.stdin is not None
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()  # type: ignore[union-attr]
            node.add_energy(node.package, 7_250_000)  # 7.25 J while the window is open
            proc.stdin.write("go\n")
            proc.stdin.flush()
            out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        result = json.loads(out.splitlines()[-1])
        # The file is root's: alice cannot read it herself, the agent reads it for her.
        assert result["direct"] == "denied"
        assert result["method"] == "counter" and result["energy_j"] == pytest.approx(7.25)
        assert all("via greenml agent" in n for n in result["note"])
        assert "read via the greenml agent" in result["notes"][0]

        # greenml run: the record says so too
        out_json = node.dir / f"home-{alice.pw_name}" / "run.json"
        run = node.cli_as(alice, "run", "--json-out", str(out_json), "--", "sleep", "0.2")
        assert run.returncode == 0, run.stderr
        devices = json.loads(out_json.read_text())["measured_devices"]
        assert devices["cpu0"]["method"] == "counter"
        assert "via greenml agent" in devices["cpu0"]["note"]
        assert "gave no reading" not in run.stderr


OPTIMIZER_AS_USER = """
import json
from greenml.measure.meter import Meter
from greenml.measure.sensors.nvml import NvmlSensor
from greenml.optimize.power_limit import PowerLimitOptimizer
from tests.agent.fake_node import nvml

gpus = nvml()  # this user's view of the node's GPUs (NVML reads need no privilege)
meter = Meter(sensors=[NvmlSensor(nvml=gpus)], sample_hz=0)
seen = []
with PowerLimitOptimizer(meter, gpus=[0], step_w=50, warmup_steps=1, profile_steps=2,
                         clock=gpus.clock) as opt:
    for _ in range(40):
        with opt.step():
            gpus.run_step()
        seen.append(gpus._stored_limits().get("%s"))
    source = opt._control.source
print(json.dumps({"chosen": opt.chosen.power_limit_w, "seen": seen, "source": source,
                  "plan": opt.plan.limits_w, "after": gpus._stored_limits().get("%s")}))
"""


def test_a_job_tunes_its_own_gpu_a_second_user_is_refused_and_job_end_restores(
    node: Node,
) -> None:
    node.start()
    with real_user() as alice, real_user() as bob:
        token_file = node.dir / "jobs" / "4242.token"
        prolog = node.cli("agent", "job-start", "--job", "4242", "--user", alice.pw_name,
                          "--node-gpus", "1", "--token-file", str(token_file))  # fmt: skip
        assert prolog.returncode == 0, prolog.stderr
        mode = token_file.stat().st_mode & 0o777
        assert token_file.stat().st_uid == alice.pw_uid and mode == 0o400
        job_env = {"GREENML_AGENT_TOKEN_FILE": str(token_file), "CUDA_VISIBLE_DEVICES": "1"}

        # alice's job runs the power-limit optimizer on its GPU (physical 1, its gpu0)
        code = OPTIMIZER_AS_USER % (UUIDS[1], UUIDS[1])
        tuned = node.run_as(alice, code, **job_env)
        assert tuned.returncode == 0, tuned.stderr
        result = json.loads(tuned.stdout.splitlines()[-1])
        assert result["source"].startswith("greenml agent at")
        assert result["plan"] == [250, 200, 150]  # the administrator's 150 W floor
        assert result["chosen"] == expected_choice(0.5, limits=(250.0, 200.0, 150.0))
        assert {150.0, 200.0} <= set(result["seen"])  # the agent did set them
        assert result["after"] == 250.0  # and the optimizer's close put the original back
        assert UUIDS[0] not in node.gpu_limits()  # the other job's GPU was never touched

        # greenml gpu limits / lock-clocks / restore go through the agent too
        shown = node.cli_as(alice, "gpu", "limits", "--json", **job_env)
        limits = json.loads(shown.stdout)
        assert limits["source"].startswith("greenml agent at")
        assert [(g["uuid"], g["min_w"], g["max_w"]) for g in limits["gpus"]] == [
            (UUIDS[1], 150.0, 250.0)]  # the job's one GPU, within the administrator's bounds
        locked = node.cli_as(alice, "gpu", "lock-clocks", "1000", **job_env)
        assert locked.returncode == 0, locked.stderr
        assert json.loads(node.clocks.read_text()) == {UUIDS[1]: [990, 990]}
        undone = node.cli_as(alice, "gpu", "restore", **job_env)
        assert "gpu0: clocks restored 990 MHz → unlocked (greenml agent)" in undone.stdout
        assert json.loads(node.clocks.read_text()) == {}

        # alice sets a limit for the rest of her job; it outlives the command
        held = node.cli_as(alice, "gpu", "set-limit", "175", "--gpus", "0", **job_env)
        assert held.returncode == 0, held.stderr
        assert "set through the greenml agent" in held.stdout
        assert node.gpu_limits()[UUIDS[1]] == 175.0

        # greenml doctor says what the agent does for each of them
        found = _doctor(node, alice, **job_env)
        assert found["agent"]["status"] == "usable" and "job 4242" in found["agent"]["reason"]
        assert found["agent-control"]["reason"] == "settable on gpu0 (job 4242)"
        assert _doctor(node, bob)["agent-control"]["status"] == "permission"

        # bob: no token; alice's token (leaked) from another user; outside the bounds
        refused = node.cli_as(bob, "gpu", "set-limit", "120", "--gpus", "0")
        assert refused.returncode == 4 and "no job token" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1 and "Traceback" not in refused.stderr
        cannot_read = node.run_as(bob, f"open({str(token_file)!r}).read()")
        assert "PermissionError" in cannot_read.stderr
        token = token_file.read_text().strip()
        leaked = node.cli_as(bob, "gpu", "set-limit", "120", "--gpus", "0",
                             GREENML_AGENT_TOKEN=token)  # fmt: skip
        assert leaked.returncode == 4 and "presented by another user" in leaked.stderr
        too_low = node.cli_as(alice, "gpu", "set-limit", "120", "--gpus", "0", **job_env)
        assert too_low.returncode == 2 and "150–250 W" in too_low.stderr
        assert node.gpu_limits()[UUIDS[1]] == 175.0

        # the epilog: the job's GPU goes back, its token stops working
        epilog = node.cli("agent", "job-end", "--job", "4242", "--token-file", str(token_file))
        assert epilog.returncode == 0, epilog.stderr
        assert node.gpu_limits()[UUIDS[1]] == 250.0 and not token_file.exists()
        after = node.cli_as(alice, "gpu", "set-limit", "200", "--gpus", "0",
                            GREENML_AGENT_TOKEN=token)  # fmt: skip
        assert after.returncode == 4 and "unknown job token" in after.stderr

    audit = node.audit_entries()
    changes = [(e["who"]["user"], e["gpu"]["uuid"], e["from"], e["to"], e["outcome"])
               for e in audit if e["what"] == "power_limit" and e["outcome"] == "done"]  # fmt: skip
    assert (alice.pw_name, UUIDS[1], 250.0, 250.0, "done") in changes
    assert (alice.pw_name, UUIDS[1], 250.0, 175.0, "done") in changes
    assert all(uuid == UUIDS[1] for _, uuid, *_ in changes)
    why = {e["why"] for e in audit if e["outcome"] == "done" and e["what"] == "power_limit"}
    assert {"power-limit optimizer", "greenml gpu set-limit"} <= why
    refusals = [(e["who"]["user"], e["what"], e["outcome"]) for e in audit
                if e["outcome"].startswith("refused")]  # fmt: skip
    leak = "refused: job 4242's token was presented by another user"
    no_token = (bob.pw_name, "gpus", "refused: " + NO_TOKEN)  # doctor's question, then the CLI's
    assert refusals == [no_token, no_token, (bob.pw_name, "gpus", leak),
                        (alice.pw_name, "gpus", "refused: unknown job token (the job ended, or "
                         "the token is not one)")]  # fmt: skip
    restored = [e for e in audit if e["outcome"] == "restored"]
    assert restored[-1]["why"] == "job ended" and restored[-1]["to"] == 250.0
    assert restored[-1]["from"] == 175.0 and restored[-1]["job"] == "4242"


def _doctor(node: Node, user: object, **env: str) -> dict[str, dict[str, object]]:
    doctor = node.cli_as(user, "doctor", "--json", **env)  # type: ignore[arg-type]
    assert doctor.returncode == 0, doctor.stderr
    return {f["sensor"]: f for f in json.loads(doctor.stdout)["sensors"]}


def test_a_sigkilled_agent_restores_the_gpu_at_its_next_start(node: Node) -> None:
    node.start(GREENML_TEST_SLOW_SET="60")
    with real_user() as alice:
        token_file = node.dir / "jobs" / "77.token"
        assert node.cli("agent", "job-start", "--job", "77", "--user", alice.pw_name, "--node-gpus",
                        "0", "--token-file", str(token_file)).returncode == 0  # fmt: skip
        command = node.user_command(alice, ["-m", "greenml", "gpu", "set-limit", "160"],
                                    GREENML_AGENT_TOKEN_FILE=str(token_file))  # fmt: skip
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              cwd=node.dir) as client:  # fmt: skip
            marker = node.dir / "gpu_limits.json.set"
            deadline = time.monotonic() + 60
            while not marker.exists():  # the GPU is changed, the agent not yet done
                assert time.monotonic() < deadline and client.poll() is None
                time.sleep(0.05)
            assert node.gpu_limits()[UUIDS[0]] == 160.0
            node.stop(signal.SIGKILL)
            client.communicate(timeout=30)
        assert client.returncode == 6  # the dead agent made no change (6): one line
    assert node.gpu_limits()[UUIDS[0]] == 160.0  # nobody put it back yet
    node.start()
    assert node.gpu_limits()[UUIDS[0]] == 250.0
    crash = [e for e in node.audit_entries() if e["why"] == "agent start after a crash"]
    assert crash and crash[0]["gpu"]["uuid"] == UUIDS[0] and crash[0]["to"] == 250.0
    node.stop()


def test_the_shipped_prolog_starts_the_agent_and_the_epilog_undoes_the_job(node: Node) -> None:
    """deploy/agent's prolog and epilog as Slurm runs them: root, a job's variables, no PATH."""
    deploy = Path(__file__).resolve().parents[2] / "deploy" / "agent"
    wrapper = node.dir / "greenml"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m greenml "$@"\n')
    wrapper.chmod(0o755)
    tokens = node.dir / "jobs"
    with real_user() as alice:
        slurm = {"SLURM_JOB_ID": "555", "SLURM_JOB_UID": str(alice.pw_uid), "SLURM_JOB_GPUS": "0"}
        env = {k: v for k, v in node.env().items() if k != "PATH"}
        env.update(GREENML=str(wrapper), GREENML_AGENT_SOCKET=str(node.socket),
                   GREENML_AGENT_CONFIG=str(node.config), GREENML_AGENT_TOKEN_DIR=str(tokens),
                   GREENML_AGENT_LOG=str(node.dir / "agent.log"), **slurm)  # fmt: skip
        prolog = subprocess.run(["/bin/sh", str(deploy / "slurm-prolog.sh")], env=env,
                                capture_output=True, text=True, timeout=120)  # fmt: skip
        try:
            assert prolog.returncode == 0 and node.socket.is_socket(), (node.dir / "agent.log")
            token = tokens / "555.token"
            assert token.stat().st_uid == alice.pw_uid
            # inside the job, greenml finds its token by itself ($SLURM_JOB_ID)
            job = {"SLURM_JOB_ID": "555", "GREENML_AGENT_TOKEN_DIR": str(tokens)}
            tuned = node.cli_as(alice, "gpu", "set-limit", "200", "--gpus", "0", **job)
            assert tuned.returncode == 0, tuned.stderr
            assert node.gpu_limits()[UUIDS[0]] == 200.0
            epilog = subprocess.run(["/bin/sh", str(deploy / "slurm-epilog.sh")], env=env,
                                    capture_output=True, text=True, timeout=120)  # fmt: skip
            assert epilog.returncode == 0
            assert node.gpu_limits()[UUIDS[0]] == 250.0 and not token.exists()
        finally:  # the agent the prolog started
            pid_file = node.state / "agent.pid"
            if pid_file.exists():
                os.kill(int(pid_file.read_text()), signal.SIGTERM)
                deadline = time.monotonic() + 30
                while node.socket.exists() and time.monotonic() < deadline:
                    time.sleep(0.05)
    assert "job 555" in (node.dir / "agent.log").read_text()

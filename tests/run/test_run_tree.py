"""What ``greenml run`` measures of the command's processes: all of them, to the last CPU-second.

Real subprocesses burning fixed CPU time; the CPU model's TDP is set to 100 W
so its dynamic rate is known: 90 W ÷ CPUs per busy CPU.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from greenml.run.process import Child

PY = sys.executable
RATE_W = 100.0 * 0.9 / psutil.cpu_count(logical=True)  # per busy CPU, at TDP 100 W

pytestmark = pytest.mark.skipif(
    Path("/sys/class/powercap/intel-rapl:0").exists(),
    reason="with RAPL the CPU is a counter over the whole package, not the process model",
)


def greenml_run(tmp_path: Path, *command: str, options: tuple[str, ...] = ()) -> dict[str, Any]:
    out = tmp_path / "run.json"
    env = {**os.environ, "GREENML_DB": str(tmp_path / "runs.db"), "GREENML_CPU_TDP_W": "100"}
    done = subprocess.run(
        [PY, "-m", "greenml", "run", "-q", "--gpus", "none", "--json", str(out), *options,
         "--", *command],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    record: dict[str, Any] = json.loads(out.read_text())
    return record


def cpu_part(record: dict[str, Any], part: str) -> float:
    cpu0 = record["energy"]["components"]["cpu"]["devices"]["cpu0"]
    return float(cpu0["parts"][part]["energy_j"])


def burn(cpu_s: float, then: str = "") -> str:
    loop = f"while time.process_time() - t < {cpu_s}: pass\n"
    return f"import time\nt = time.process_time()\n{loop}{then}"


def wait_for(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_a_short_command_is_measured_to_its_last_cpu_second(tmp_path: Path) -> None:
    # Idle while greenml starts measuring, then a burn that ends with the command: the
    # sampler's last look may be up to a second before the end; the run's own last
    # reading, taken before the command is reaped, is not.
    record = greenml_run(tmp_path, PY, "-c", "import time\ntime.sleep(0.5)\n" + burn(0.5))
    dynamic = cpu_part(record, "dynamic")
    assert 0.49 * RATE_W <= dynamic <= 0.8 * RATE_W
    static = cpu_part(record, "static")
    assert static == pytest.approx(12.0 * record["duration_s"], rel=0.01)
    labels = record["energy"]["components"]["cpu"]["devices"]["cpu0"]["parts"]
    assert "CPU-seconds" in labels["dynamic"]["label"]
    assert "idle floor" in labels["static"]["label"]


def test_daemonized_grandchildren_are_measured(tmp_path: Path) -> None:
    done = tmp_path / "done"
    orphan = tmp_path / "orphan.py"  # waits for the run to start, burns, says so, lingers
    orphan.write_text("import time\ntime.sleep(0.5)\n" + burn(0.6, "import os, pathlib, sys\n"
                      "pathlib.Path(sys.argv[1]).write_text(str(os.getpid()))\ntime.sleep(60)\n"))
    # ( ... &) orphans it at once: init, not the shell, is its parent
    script = f"({PY} {orphan} {done} >/dev/null 2>&1 &); while [ ! -s {done} ]; do sleep 0.05; done"
    try:
        record = greenml_run(tmp_path, "sh", "-c", script)
    finally:
        if done.exists() and done.read_text():
            os.kill(int(done.read_text()), signal.SIGKILL)
    assert cpu_part(record, "dynamic") >= 0.6 * RATE_W  # not less than an idle run


def test_kill_on_exit_stops_the_command_when_greenml_is_killed(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    script = f"import os, pathlib, time\npathlib.Path({str(ready)!r}).write_text(str(os.getpid()))\ntime.sleep(120)\n"  # noqa: E501
    env = {**os.environ, "GREENML_DB": str(tmp_path / "runs.db")}
    proc = subprocess.Popen(
        [PY, "-m", "greenml", "run", "-q", "--kill-on-exit", "--sample-hz", "10", "--", PY, "-c",
         script],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    wait_for(lambda: ready.exists() and bool(ready.read_text()))
    child = psutil.Process(int(ready.read_text()))
    time.sleep(2.5)  # a flush of samples, so the run reads back incomplete
    proc.kill()
    proc.wait(timeout=10)

    def gone() -> bool:
        try:
            return bool(child.status() == psutil.STATUS_ZOMBIE)
        except psutil.NoSuchProcess:
            return True

    try:
        wait_for(gone, timeout=10)
    finally:
        if not gone():
            child.kill()
    listed = subprocess.run(
        [PY, "-m", "greenml", "runs", "list", "--json", "-n", "1"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    record = json.loads(listed.stdout.splitlines()[0])
    assert record["status"] == "incomplete"
    shown = subprocess.run(
        [PY, "-m", "greenml", "runs", "export", record["id"], "--format", "json"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    full = json.loads(shown.stdout)
    assert "greenml was killed" in full["energy"]["note"]
    assert "may have run on unmeasured" in full["energy"]["note"]
    assert full["kill_on_exit"] is True


def test_wait_exit_leaves_a_zombie_whose_cpu_time_is_final() -> None:
    child = Child([PY, "-c", burn(0.3, "raise SystemExit(4)")])
    try:
        child.wait_exit(tick=lambda: None, tick_s=0.05)
        zombie = psutil.Process(child.pid)
        assert zombie.status() == psutil.STATUS_ZOMBIE
        assert zombie.cpu_times().user + zombie.cpu_times().system >= 0.3
    finally:
        child.restore_signals()
        code = child.reap()
    assert code == 4


def test_a_pause_reaches_the_commands_daemons_too(tmp_path: Path) -> None:
    from greenml.run.pausing import descendants

    pidfile = tmp_path / "orphan"
    orphan = f"import os, pathlib, time\npathlib.Path({str(pidfile)!r}).write_text(str(os.getpid()))\ntime.sleep(60)\n"  # noqa: E501
    (tmp_path / "orphan.py").write_text(orphan)
    env = {**os.environ, "GREENML_EVENTS": str(tmp_path / "events.jsonl")}
    shell = subprocess.Popen(
        ["sh", "-c", f"({PY} {tmp_path / 'orphan.py'} &); sleep 60"], env=env
    )
    try:
        wait_for(lambda: pidfile.exists() and bool(pidfile.read_text()))
        daemon = int(pidfile.read_text())
        assert psutil.Process(daemon).ppid() != shell.pid  # it left the shell's tree
        assert daemon in descendants(shell.pid)
    finally:
        if pidfile.exists() and pidfile.read_text():
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
        shell.kill()
        shell.wait()

"""Which processes a run's tree reads at its start: only those started after the command."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time

import psutil
from hypothesis import given
from hypothesis import strategies as st

from greenml.measure.sensors.process_tree import ProcessTree, started_after


@st.composite
def allocations(draw: st.DrawFn) -> tuple[int, int, list[int], list[int], int]:
    """A PID counter that hands out PIDs in order and wraps at pid_max (PIDs 300.. after
    a wrap, as Linux does), with the command's PID among them; live PIDs on either side."""
    pid_max = draw(st.integers(400, 5000))
    start = draw(st.integers(300, pid_max - 1))
    before = draw(st.integers(0, pid_max - 301))
    after = draw(st.integers(0, pid_max - 302 - before))  # fewer than pid_max in all

    def nth(i: int) -> int:
        return 300 + (start - 300 + i) % (pid_max - 300)

    earlier = [nth(i) for i in range(before)]
    command = nth(before)
    later = [nth(before + 1 + i) for i in range(after)]
    last = later[-1] if later else command
    return command, last, earlier, later, pid_max


@given(allocations(), st.data())
def test_exactly_the_pids_given_out_after_the_command_are_kept(
    case: tuple[int, int, list[int], list[int], int], data: st.DataObject
) -> None:
    command, last, earlier, later, _ = case
    alive_earlier = set(data.draw(st.lists(st.sampled_from(earlier), unique=True))) if earlier else set()  # noqa: E501
    alive_later = set(data.draw(st.lists(st.sampled_from(later), unique=True))) if later else set()
    assert started_after(command, alive_earlier | alive_later, last) == alive_later


def test_a_daemon_the_command_started_before_the_tree_was_made_is_in_it(tmp_path) -> None:
    """The command double-forks a daemon (re-parented away) at once; the tree, made just
    after, as ``greenml run`` makes it, has it (its PID read as one given out later)."""
    marker = f"GREENML_TEST_MARKER={tmp_path}"
    daemon_pid = tmp_path / "daemon.pid"
    script = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    if os.fork() == 0:\n"
        f"        open({str(daemon_pid)!r} + '.tmp', 'w').write(str(os.getpid()))\n"
        f"        os.rename({str(daemon_pid)!r} + '.tmp', {str(daemon_pid)!r})\n"
        "        time.sleep(30)\n"
        "    os._exit(0)\n"
        "time.sleep(30)\n"
    )
    env = {**os.environ, "GREENML_TEST_MARKER": str(tmp_path)}
    command = subprocess.Popen([sys.executable, "-S", "-c", script], env=env)
    daemon = None
    try:
        deadline = time.monotonic() + 10
        while not daemon_pid.exists():
            assert time.monotonic() < deadline, "the daemon did not start"
            time.sleep(0.005)
        daemon = int(daemon_pid.read_text())
        assert daemon not in [c.pid for c in psutil.Process(command.pid).children(recursive=True)]
        tree = ProcessTree(command.pid, marker)
        assert {command.pid, daemon} <= {p.pid for p in tree.members()}
        unmarked = ProcessTree(command.pid)
        assert daemon not in {p.pid for p in unmarked.members()}
    finally:
        command.kill()
        command.wait()
        if daemon is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(daemon, 9)

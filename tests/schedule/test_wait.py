"""Waiting for a planned start and pausing a job between chunks (fake clock; one real child)."""

from __future__ import annotations

import io
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from greenml.accounting.live import HttpSettings
from greenml.errors import ConfigError
from greenml.run.pausing import Pauser, PauseSchedule, drive, pending_signals
from greenml.run.waiting import Countdown, clock_text, wait_until
from tests.accounting.live.conftest import FakeApi, api, fast, load, sleeps  # noqa: F401
from tests.helpers import ManualClock


class FakeSleep:
    """Sleeping moves the fake clock; every nap is kept."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.naps: list[float] = []

    def __call__(self, seconds: float) -> None:
        assert seconds >= 0
        self.naps.append(seconds)
        self.clock.advance(seconds)


class FakeProcesses:
    """A process tree whose members are running or stopped, driven by signals."""

    def __init__(self, tree: dict[int, list[int]]) -> None:
        self.tree = tree
        self.stopped: set[int] = set()
        self.sent: list[tuple[int, int]] = []
        self.pending: dict[int, set[int]] = {}

    def send(self, pid: int, signum: int) -> None:
        if pid not in self.tree:
            raise ProcessLookupError(pid)
        self.sent.append((pid, signum))
        if signum == signal.SIGSTOP:
            self.stopped.add(pid)
        elif signum == signal.SIGCONT:
            self.stopped.discard(pid)
            self.pending.pop(pid, None)

    def children(self, pid: int) -> list[int]:
        out = []
        for child in self.tree.get(pid, []):
            out += [child, *self.children(child)]
        return out

    def signals_pending(self, pid: int) -> set[int]:
        return self.pending.get(pid, set()) if pid in self.stopped else set()


# ----------------------------------------------------------------------------- waiting


def test_wait_until_counts_down_on_the_fake_clock() -> None:
    clock = ManualClock(1000.0)
    sleep = FakeSleep(clock)
    seen: list[float] = []
    waited = wait_until(1003.5, clock=clock, sleep=sleep, on_tick=seen.append)
    assert waited == pytest.approx(3.5)
    assert clock.now == pytest.approx(1003.5)
    assert seen == [3.5, 2.5, 1.5, 0.5]
    assert sleep.naps == [1.0, 1.0, 1.0, 0.5]


def test_wait_until_a_past_start_returns_at_once() -> None:
    clock = ManualClock(1000.0)
    sleep = FakeSleep(clock)
    assert wait_until(900.0, clock=clock, sleep=sleep) == 0.0
    assert sleep.naps == []


def test_countdown_redraws_one_line() -> None:
    out = io.StringIO()
    countdown = Countdown(1_700_000_000.0, "212 g/kWh vs 380 now", stream=out)
    countdown.update(3723.2)
    countdown.clear()
    text = out.getvalue()
    assert text.startswith("\r\x1b[2Kgreenml ▸ starting in 1:02:03 at 2023-11-14 22:13:20 UTC")
    assert "212 g/kWh vs 380 now" in text and "\n" not in text
    assert text.endswith("\r\x1b[2K")
    assert clock_text(0.2) == "0:00:00" and clock_text(90061) == "25:01:01"


# ----------------------------------------------------------------------------- the schedule


def test_schedule_runs_in_chunks_and_after_the_plan() -> None:
    s = PauseSchedule([(100.0, 200.0), (300.0, 350.0), (350.0, 400.0), (500.0, 600.0)])
    assert [s.running_at(t) for t in (50, 100, 199, 200, 299, 300, 360, 450, 599, 600, 10**6)] == [
        True, True, True, False, False, True, True, False, True, True, True,
    ]  # fmt: skip
    assert s.pauses() == [(200.0, 300.0), (400.0, 500.0)]  # back-to-back chunks: no pause
    changes = [s.next_change(t) for t in (0, 150, 200, 350, 450, 500)]
    assert changes == [200, 200, 300, 400, 500, None]


@pytest.mark.parametrize(
    "chunks", [[], [(10.0, 10.0)], [(10.0, 20.0), (15.0, 30.0)], [(30.0, 40.0), (10.0, 20.0)]]
)
def test_bad_chunks_are_refused(chunks: list[tuple[float, float]]) -> None:
    with pytest.raises(ConfigError):
        PauseSchedule(chunks)


def test_pauser_stops_the_tree_parent_first_and_continues_it_parent_last() -> None:
    procs = FakeProcesses({10: [11], 11: [12], 12: []})
    schedule = PauseSchedule([(0.0, 60.0), (120.0, 180.0)])
    pauser = Pauser(schedule, 10, send=procs.send, children=procs.children,
                    pending=procs.signals_pending)  # fmt: skip
    assert pauser.poll(30.0) is None
    assert pauser.poll(60.0) == "stop"
    assert procs.stopped == {10, 11, 12}
    assert procs.sent == [(10, signal.SIGSTOP), (11, signal.SIGSTOP), (12, signal.SIGSTOP)]
    assert pauser.poll(90.0) is None  # still paused, nothing sent
    assert pauser.poll(121.0) == "cont"
    assert procs.stopped == set()
    assert procs.sent[3:] == [(12, signal.SIGCONT), (11, signal.SIGCONT), (10, signal.SIGCONT)]
    assert pauser.poll(500.0) is None  # after the plan: never paused again
    assert pauser.pauses == [(60.0, 121.0)] and pauser.paused_s == 61.0
    summary = pauser.summary()
    assert summary["planned_pauses"] == [[60.0, 120.0]] and summary["abandoned"] is None


def test_a_terminating_signal_while_paused_resumes_the_job() -> None:
    procs = FakeProcesses({10: []})
    clock = ManualClock(0.0)
    schedule = PauseSchedule([(0.0, 60.0), (600.0, 660.0)])
    pauser = Pauser(schedule, 10, clock=clock, send=procs.send, children=procs.children,
                    pending=procs.signals_pending)  # fmt: skip
    assert pauser.poll(61.0) == "stop"
    procs.pending[10] = {signal.SIGINT}  # Ctrl-C reached the stopped child
    clock.now = 70.0
    assert pauser.poll(70.0) == "cont"
    assert procs.stopped == set()
    assert "SIGINT" in (pauser.abandoned or "")
    assert pauser.poll(700.0) is None and pauser.poll(61.0) is None  # schedule no longer followed


def test_release_never_leaves_a_job_stopped_and_gone_processes_are_skipped() -> None:
    procs = FakeProcesses({10: [11], 11: []})
    clock = ManualClock(0.0)
    pauser = Pauser(PauseSchedule([(0.0, 1.0), (5.0, 6.0)]), 10, clock=clock, send=procs.send,
                    children=lambda pid: [11, 99], pending=procs.signals_pending)  # fmt: skip
    assert pauser.poll(2.0) == "stop"  # 99 is gone: skipped, no error
    clock.now = 3.0
    pauser.release()
    assert procs.stopped == set() and pauser.pauses == [(2.0, 3.0)]


def test_drive_sleeps_to_the_boundaries_with_a_fake_process() -> None:
    clock = ManualClock(0.0)
    sleep = FakeSleep(clock)
    procs = FakeProcesses({10: []})

    class Proc:
        def poll(self) -> int | None:
            return 4 if clock.now >= 9.0 else None

    pauser = Pauser(PauseSchedule([(0.0, 2.0), (5.0, 7.0)]), 10, clock=clock, send=procs.send,
                    children=procs.children, pending=procs.signals_pending)  # fmt: skip
    assert drive(Proc(), pauser, clock=clock, sleep=sleep, poll_s=1.0) == 4
    assert pauser.pauses == [(2.0, 5.0)]
    assert [s for _, s in procs.sent] == [signal.SIGSTOP, signal.SIGCONT]


# ----------------------------------------------------------------------------- a real child

CHILD = """
import sys, time
print("ready", flush=True)
stamps = []
for _ in range(40):
    stamps.append(time.monotonic())
    time.sleep(0.01)
open(sys.argv[1], "w").write("\\n".join(map(repr, stamps)))
sys.exit(3)
"""


def gaps(path: Path) -> list[float]:
    stamps = [float(x) for x in path.read_text().split()]
    return [b - a for a, b in itertools.pairwise(stamps)]


def test_a_real_child_is_stopped_and_continued_and_its_exit_code_passes(tmp_path: Path) -> None:
    out = tmp_path / "stamps.txt"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(out)], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    # the child works ≥ 0.4 s: let it run 0.1 s, pause it 0.6 s, then run to the end
    now = time.time()
    pauser = Pauser(PauseSchedule([(now - 0.1, now + 0.1), (now + 0.7, now + 5.0)]), proc.pid)
    seen_stopped = []

    def sleep(seconds: float) -> None:
        if pauser.paused_since is not None:
            seen_stopped.append(_state(proc.pid))
        time.sleep(seconds)

    code = drive(proc, pauser, sleep=sleep, poll_s=0.02)
    proc.stdout.close()
    assert code == 3
    assert len(pauser.pauses) == 1
    a, b = pauser.pauses[0]
    assert 0.5 < b - a < 1.0
    assert "T" in seen_stopped  # /proc says "stopped" during the pause
    longest = max(gaps(out))
    assert longest > 0.45  # the child's own clock saw the pause
    assert sorted(gaps(out))[-2] < 0.3  # and no other one


def test_pending_signals_of_a_stopped_real_child() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        os.kill(proc.pid, signal.SIGSTOP)
        _wait_state(proc.pid, "T")
        os.kill(proc.pid, signal.SIGTERM)
        assert signal.SIGTERM in pending_signals(proc.pid)
        os.kill(proc.pid, signal.SIGCONT)
        assert proc.wait(timeout=10) == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert pending_signals(proc.pid) == set()  # gone: nothing pending


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "?"


def _wait_state(pid: int, state: str) -> None:
    deadline = time.monotonic() + 5
    while _state(pid) != state:
        assert time.monotonic() < deadline, f"process {pid} never reached state {state}"
        time.sleep(0.01)


# ----------------------------------------------------------------------------- greenml wait

T0 = datetime(2026, 1, 5, 0, 0, tzinfo=timezone.utc).timestamp()  # a Monday, 00:00 UTC


def hourly_trace(path: Path, first_h: int, hours: int, dips: dict[int, float]) -> Path:
    """``Time,Carbon Intensity`` rows from T0 + first_h hours; 300 g/kWh except the dips."""
    rows = ["Time,Carbon Intensity"]
    for h in range(first_h, first_h + hours):
        stamp = datetime.fromtimestamp(T0 + 3600 * h, tz=timezone.utc).isoformat()
        rows.append(f"{stamp},{dips.get(h, 300.0)}")
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture
def fake_time(monkeypatch: pytest.MonkeyPatch) -> tuple[ManualClock, FakeSleep]:
    """greenml wait on a fake clock that starts at T0 + 10 min."""
    import greenml.run.green as cli_wait

    clock = ManualClock(T0 + 600.0)
    sleep = FakeSleep(clock)
    monkeypatch.setattr(cli_wait, "CLOCK", clock)
    monkeypatch.setattr(cli_wait, "SLEEP", sleep)
    return clock, sleep


def wait_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    from greenml.cli import main

    code = main(["plan", "wait", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_wait_sleeps_until_the_planned_start(
    fake_time: tuple[ManualClock, FakeSleep], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clock, sleep = fake_time
    trace = hourly_trace(tmp_path / "t.csv", -2, 30, {5: 120.0, 6: 100.0, 7: 110.0})
    code, out, err = wait_cli(
        capsys, "--until-green", "--deadline", "+20h", "--duration", "3h", "--zone", "DE",
        "--intensity-trace", str(trace),
    )  # fmt: skip
    assert code == 0, err
    assert clock.now == T0 + 5 * 3600  # woke up at 05:00, the start of the 3 clean hours
    assert sum(sleep.naps) == pytest.approx(5 * 3600 - 600)
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1  # not a terminal: one line saying when it starts
    assert "starts 2026-01-05 05:00 UTC (in 4:50:00)" in lines[0]
    assert "110 g/kWh expected vs 300 starting now" in lines[0] and "saving 63 %" in lines[0]
    assert "trace file t.csv" in lines[0]


def test_wait_dry_run_prints_the_plan_and_does_not_sleep(
    fake_time: tuple[ManualClock, FakeSleep], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clock, sleep = fake_time
    trace = hourly_trace(tmp_path / "t.csv", -2, 30, {9: 50.0})
    code, out, err = wait_cli(
        capsys, "--until-green", "--deadline", "2026-01-05T12:00Z", "--duration", "1h",
        "--zone", "DE", "--intensity-trace", str(trace), "--dry-run", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert sleep.naps == [] and clock.now == T0 + 600
    plan = json.loads(out)
    assert plan["start"] == "2026-01-05T09:00:00Z" and plan["duration_source"] == "--duration"
    assert plan["mean_intensity_g_per_kwh"] == 50.0 and plan["interruptible"] is False
    assert "would start 2026-01-05 09:00 UTC" in err and "forecast: trace file t.csv" in err


def test_the_old_spellings_greenml_wait_and_trace_still_work(
    fake_time: tuple[ManualClock, FakeSleep], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from greenml.cli import main

    trace = hourly_trace(tmp_path / "t.csv", -2, 30, {9: 50.0})
    code = main(["wait", "--until-green", "--deadline", "2026-01-05T12:00Z", "--duration", "1h",
                 "--zone", "DE", "--trace", str(trace), "--dry-run", "--json"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["start"] == "2026-01-05T09:00:00Z"
    assert err.splitlines()[:2] == [
        "greenml: `greenml wait` is now `greenml plan wait`",
        "greenml: --trace is now --intensity-trace",
    ]


def test_max_wait_caps_the_start(
    fake_time: tuple[ManualClock, FakeSleep], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clock, _ = fake_time
    trace = hourly_trace(tmp_path / "t.csv", -2, 30, {3: 200.0, 9: 50.0})
    code, _, err = wait_cli(
        capsys, "--until-green", "--deadline", "+20h", "--duration", "50m", "--zone", "DE",
        "--intensity-trace", str(trace), "--max-wait", "4h",
    )  # fmt: skip
    assert code == 0, err
    assert clock.now == T0 + 3 * 3600  # 09:00 is cleaner, but beyond 4 h from now


def test_wait_on_history_uses_the_seasonal_forecaster(
    fake_time: tuple[ManualClock, FakeSleep], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    days = 60  # history up to now: the daily dip from 11:00 to 14:00 comes back
    wobble = np.random.default_rng(0).normal(0, 10, 24 * days)
    dips = {
        h: (120.0 if 11 <= h % 24 < 14 else 300.0) + wobble[h] for h in range(-24 * days, 0)
    }
    trace = hourly_trace(tmp_path / "hist.csv", -24 * days, 24 * days, dips)
    code, out, err = wait_cli(
        capsys, "--until-green", "--deadline", "+20h", "--duration", "2h", "--zone", "DE",
        "--intensity-trace", str(trace), "--dry-run", "--json",
    )  # fmt: skip
    assert code == 0, err
    plan = json.loads(out)
    start = datetime.fromisoformat(plan["start"].replace("Z", "+00:00"))
    assert 11 <= start.hour <= 12
    assert "seasonal forecaster" in plan["forecast_source"]
    assert plan["saving_pct"] > 30


def test_ctrl_c_while_waiting_exits_130(
    fake_time: tuple[ManualClock, FakeSleep],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import greenml.run.green as cli_wait

    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_wait, "SLEEP", interrupted)
    trace = hourly_trace(tmp_path / "t.csv", -2, 30, {5: 100.0})
    code, _, _ = wait_cli(
        capsys, "--until-green", "--deadline", "+20h", "--duration", "1h", "--zone", "DE",
        "--intensity-trace", str(trace),
    )  # fmt: skip
    assert code == 130


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--deadline", "+8h", "--duration", "1h", "--zone", "DE"], "needs --until-green"),
        (["--until-green", "--duration", "1h", "--zone", "DE"], "--deadline is required"),
        (["--until-green", "--deadline", "+8h", "--zone", "DE"], "--duration is required"),
        (["--until-green", "--deadline", "+8h", "--duration", "0h", "--zone", "DE"], "positive"),
        (["--until-green", "--deadline", "+8h", "--duration", "-5m", "--zone", "DE"], "positive"),
        (["--until-green", "--deadline", "+8h", "--duration", "soon", "--zone", "DE"], "90m"),
        (["--until-green", "--deadline", "2026-01-05T08:00", "--duration", "1h", "--zone", "DE"],
         "no time zone"),
        (["--until-green", "--deadline", "+8h", "--duration", "1h", "--zone", "XX-NOWHERE"],
         "unknown grid zone 'XX-NOWHERE'; closest known"),
        (["--until-green", "--deadline", "+8h", "--duration", "1h", "--zone", "DE"],
         "only a yearly mean is known for DE"),
        (["--until-green", "--deadline", "+8h", "--duration", "1h"], "--zone Z or --region R"),
        (["--until-green", "--deadline", "+1h", "--duration", "2h", "--zone", "DE",
          "--intensity-trace", "{trace}"], "earliest feasible deadline is 2026-01-05T02:10Z"),
        (["--until-green", "--deadline", "+40h", "--duration", "2h", "--zone", "DE",
          "--intensity-trace", "{trace}"], "no data for"),
    ],
)  # fmt: skip
def test_bad_wait_input_is_one_line_and_exit_2(
    args: list[str],
    message: str,
    fake_time: tuple[ManualClock, FakeSleep],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from greenml.accounting import location

    for var in location.ENV_VARS.values():
        monkeypatch.delenv(var, raising=False)
    trace = hourly_trace(tmp_path / "t.csv", -2, 30, {5: 100.0})
    code, out, err = wait_cli(capsys, *[a.format(trace=trace) for a in args])
    assert code == 2, err
    assert out == "" and err.count("\n") == 1
    assert err.startswith("greenml: error: ") and message in err


def test_wait_on_a_provider_forecast(
    api: FakeApi,  # noqa: F811 (the fixture imported above)
    fast: HttpSettings,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Electricity Maps' forecast, served in its documented format from 127.0.0.1."""
    import greenml.accounting.live as live
    import greenml.run.green as cli_wait

    api.route("/v3/carbon-intensity/forecast", load("electricitymaps_forecast.json"))
    real = live.ElectricityMapsSource
    monkeypatch.setattr(
        live, "ElectricityMapsSource",
        lambda zone: real(zone, token="t0ken", base_url=api.url + "/v3", http=fast),
    )  # fmt: skip
    now = datetime(2024, 3, 14, 12, 20, tzinfo=timezone.utc).timestamp()
    monkeypatch.setattr(cli_wait, "CLOCK", ManualClock(now))
    code, out, err = wait_cli(
        capsys, "--until-green", "--deadline", "2024-03-14T23:00Z", "--duration", "2h",
        "--zone", "DE", "--intensity-provider", "electricitymaps", "--dry-run", "--json",
    )  # fmt: skip
    assert code == 0, err
    plan = json.loads(out)
    assert plan["start"] == "2024-03-14T16:00:00Z"  # 255 and 250 g/kWh: the lowest two hours
    assert plan["mean_intensity_g_per_kwh"] == pytest.approx(252.5)
    assert "Electricity Maps" in plan["forecast_source"] and "forecast" in plan["forecast_source"]
    assert "no interval" in plan["uncertainty"]
    assert api.hits("/v3/carbon-intensity/forecast")[0].query["zone"] == "DE"


def test_a_saving_whose_interval_includes_none_starts_now(
    fake_time: tuple[ManualClock, FakeSleep], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clock, sleep = fake_time
    days = 60  # a noisy history with almost no daily shape: the forecast cannot promise a saving
    noise = np.random.default_rng(1).normal(0, 60, 24 * days)
    hours = range(-24 * days, 0)
    history = {h: 300.0 + (8.0 if 1 <= h % 24 < 3 else 0.0) + noise[h] for h in hours}
    trace = hourly_trace(tmp_path / "hist.csv", -24 * days, 24 * days, history)
    code, out, err = wait_cli(
        capsys, "--until-green", "--deadline", "+4h", "--duration", "1h", "--zone", "GB",
        "--intensity-trace", str(trace), "--dry-run", "--json",
    )  # fmt: skip
    assert code == 0, err
    plan = json.loads(out)
    assert plan["start"] == "2026-01-05T00:10:00Z"  # now, not the 03:00 the point forecast prefers
    assert any("starting now" in n and "includes no saving" in n for n in plan["wait_notes"])
    assert "[-0" not in err and "-0 %" not in err
    assert sleep.naps == [] and clock.now == T0 + 600

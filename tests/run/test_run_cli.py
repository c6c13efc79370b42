"""``greenml run`` end to end, in real subprocesses with real signals."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

GREENML = [sys.executable, "-m", "greenml"]
PY = sys.executable


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


def greenml(db: Path, *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GREENML_DB": str(db)}
    return subprocess.run(
        [*GREENML, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        **kwargs,  # type: ignore[call-overload]
    )


def start(db: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "GREENML_DB": str(db)}
    return subprocess.Popen(
        [*GREENML, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def newest_run(db: Path) -> dict[str, object]:
    listed = greenml(db, "runs", "list", "--json", "-n", "1")
    assert listed.returncode == 0, listed.stderr
    row: dict[str, object] = json.loads(listed.stdout.splitlines()[0])
    return row


def wait_for(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_output_passes_through_and_exit_code_is_returned(db: Path, tmp_path: Path) -> None:
    script = "import sys; print('to stdout'); print('to stderr', file=sys.stderr); sys.exit(3)"
    out = tmp_path / "run.json"
    done = greenml(
        db, "run", "--name", "demo", "--tag", "lr=0.1", "--json-out", str(out), "--",
        PY, "-c", script,
    )  # fmt: skip
    assert done.returncode == 3
    assert done.stdout == "to stdout\n"  # greenml adds nothing to the command's stdout
    assert done.stderr.startswith("to stderr\n")
    record = json.loads(out.read_text())
    for key in (
        "id",
        "name",
        "command",
        "started_at",
        "duration_s",
        "exit_code",
        "status",
        "energy",
        "environment",
    ):
        assert key in record
    assert record["status"] == "failed"
    assert record["exit_code"] == 3
    assert record["name"] == "demo"
    assert record["tags"] == {"lr": "0.1"}
    assert record["started_at"].endswith("+00:00")
    assert record["command"] == [PY, "-c", script]
    energy = record["energy"]
    assert energy["total_kwh"] == pytest.approx(energy["total_j"] / 3.6e6)
    for component in energy["components"].values():
        assert component["method"] in ("counter", "power-integrated", "estimated")
        assert 0 < component["uncertainty_rel"] <= 1
        assert component["devices"]
    assert record["environment"]["python"]["version"]
    assert len(record["environment"]["packages"]["sha256"]) == 64


def test_the_old_json_file_option_still_works_and_says_the_new_one(
    db: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run.json"
    done = greenml(db, "run", "-q", "--gpus", "none", "--json", str(out), "--", PY, "-c", "pass")
    assert done.returncode == 0, done.stderr
    assert done.stderr == "greenml: --json FILE is now --json-out FILE\n"
    assert json.loads(out.read_text())["status"] == "completed"


def test_machine_without_counters_is_labelled_estimated(db: Path, tmp_path: Path) -> None:
    if Path("/sys/class/powercap/intel-rapl:0").exists():
        pytest.skip("this machine has RAPL counters")
    out = tmp_path / "run.json"
    done = greenml(
        db, "run", "--gpus", "none", "--json-out", str(out), "--", PY, "-c", "sum(range(10**6))"
    )
    assert done.returncode == 0, done.stderr
    cpu = json.loads(out.read_text())["energy"]["components"]["cpu"]
    assert cpu["method"] == "estimated"
    assert cpu["uncertainty_rel"] >= 0.3
    assert cpu["energy_j"] > 0
    assert "estimated" in done.stderr  # the summary table says so too


def test_sigterm_is_forwarded_and_the_childs_exit_code_kept(db: Path, tmp_path: Path) -> None:
    ready, got = tmp_path / "ready", tmp_path / "got"
    script = (
        "import signal, sys, time, pathlib\n"
        f"def h(*_): pathlib.Path({str(got)!r}).write_text('TERM'); sys.exit(7)\n"
        "signal.signal(signal.SIGTERM, h)\n"
        f"pathlib.Path({str(ready)!r}).write_text('ok')\n"
        "time.sleep(60)\n"
    )
    proc = start(db, "run", "-q", "--", PY, "-c", script)
    wait_for(ready.exists)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert got.read_text() == "TERM"
    assert proc.returncode == 7
    assert newest_run(db)["status"] == "interrupted"  # stopped on purpose, not a failure


def test_a_child_killed_by_a_signal_kills_greenml_the_same_way(db: Path) -> None:
    script = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    done = greenml(db, "run", "-q", "--", PY, "-c", script)
    assert done.returncode == -signal.SIGKILL


def test_sigint_sent_to_greenml_reaches_the_child(db: Path, tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    script = (
        f"import pathlib, time\npathlib.Path({str(ready)!r}).write_text('ok')\ntime.sleep(60)\n"
    )
    proc = start(db, "run", "-q", "--", PY, "-c", script)
    wait_for(ready.exists)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    # Python dies of the SIGINT it did not handle; greenml leaves the same way
    assert proc.returncode == -signal.SIGINT
    assert newest_run(db)["status"] == "interrupted"


@pytest.mark.parametrize(
    ("code", "signals", "status"),
    [(0, [], "completed"), (1, [], "failed"), (-signal.SIGKILL, [], "failed"),
     (-signal.SIGINT, [], "interrupted"), (130, [], "interrupted"), (143, [], "interrupted"),
     (75, [signal.SIGTERM], "interrupted"), (0, [signal.SIGINT], "completed")],
)  # fmt: skip
def test_run_status_tells_an_interruption_from_a_failure(
    code: int, signals: list[int], status: str
) -> None:
    from greenml.run.process import run_status

    assert run_status(code, signals) == status


def test_kill_9_leaves_an_incomplete_run_with_its_samples(db: Path, tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    script = (
        f"import os, pathlib, time\npathlib.Path({str(ready)!r}).write_text(str(os.getpid()))\n"
        "time.sleep(120)\n"
    )
    proc = start(db, "run", "-q", "--sample-hz", "10", "--", PY, "-c", script)
    wait_for(ready.exists)

    def samples_flushed() -> bool:
        if not db.exists():
            return False
        try:
            with sqlite3.connect(db) as conn:
                return bool(conn.execute("select count(*) from samples").fetchone()[0] > 5)
        except sqlite3.OperationalError:
            return False

    wait_for(samples_flushed, timeout=30)
    proc.kill()
    proc.wait(timeout=10)
    os.kill(int(ready.read_text()), signal.SIGKILL)  # the orphaned command
    listed = greenml(db, "runs", "list")
    assert listed.returncode == 0, listed.stderr
    assert "incomplete" in listed.stdout and "(partial)" in listed.stdout
    row = newest_run(db)
    assert row["partial"] is True and float(row["total_kwh"]) > 0  # type: ignore[arg-type]
    run_id = row["id"]
    exported = greenml(db, "runs", "export", run_id, "--format", "json")
    record = json.loads(exported.stdout)
    assert record["status"] == "incomplete"
    assert record["energy"]["total_j"] > 0
    # a modelled device stays labelled estimated in the partial figures
    cpu_method = record["measured_devices"]["cpu0"]["method"]
    expected = "estimated" if cpu_method == "estimated" else "power-integrated"
    assert record["energy"]["components"]["cpu"]["method"] == expected
    csv_out = greenml(db, "runs", "export", run_id, "--format", "csv")
    lines = csv_out.stdout.strip().splitlines()
    assert lines[0].startswith("time_utc,device,component,power_w")
    assert len(lines) > 5


def test_runs_show_and_prefix_lookup(db: Path) -> None:
    done = greenml(db, "run", "-q", "--name", "shown", "--", PY, "-c", "pass")
    assert done.returncode == 0, done.stderr
    run_id = newest_run(db)["id"]
    shown = greenml(db, "runs", "show", run_id[:6])
    assert shown.returncode == 0, shown.stderr
    assert run_id in shown.stdout
    assert "completed" in shown.stdout
    assert "total" in shown.stdout
    missing = greenml(db, "runs", "show", "zzzz")
    assert missing.returncode == 3  # not found
    assert missing.stderr.count("\n") == 1 and "zzzz" in missing.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "--tag", "oops", "--", "true"], "key=value"),
        (["run", "--sample-hz", "0", "--", "true"], "--sample-hz"),
        (["run", "--gpus", "x,y", "--", "true"], "--gpus"),
        (["run", "--", "surely-not-a-command-xyz"], "command not found"),
        (["run", "--bogus", "--", "true"], "--bogus"),
        (["run"], "COMMAND"),
        (["runs", "export", "abc", "--format", "xml"], "xml"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(db: Path, args: list[str], message: str) -> None:
    done = greenml(db, *args)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("greenml: error:")
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_corrupt_database_is_refused_and_left_untouched(tmp_path: Path) -> None:
    db = tmp_path / "corrupt.db"
    garbage = os.urandom(4096)
    db.write_bytes(garbage)
    for args in (["run", "--", PY, "-c", "pass"], ["runs", "list"]):
        done = greenml(db, *args)
        assert done.returncode == 2
        assert done.stderr.count("\n") == 1, done.stderr
        assert "Traceback" not in done.stderr
    assert db.read_bytes() == garbage


def test_unwritable_database_location_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    done = greenml(blocker / "sub" / "runs.db", "run", "--", PY, "-c", "pass")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr


def test_control_characters_and_markup_in_names_never_reach_the_terminal(db: Path) -> None:
    hostile = "\x1b[2Jx[bold]\x07\u202e"
    done = greenml(db, "run", "-q", "--name", hostile, "--tag", f"k={hostile}", "--", PY, "-c", "0")
    assert done.returncode == 0, done.stderr
    for args in (("runs", "list"), ("runs", "show", newest_run(db)["id"])):
        shown = greenml(db, *args)
        assert shown.returncode == 0, shown.stderr
        assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout
        assert "\u202e" not in shown.stdout
        assert "\\x1b[2Jx[bold]" in shown.stdout  # shown, visibly, not acted on


@pytest.mark.parametrize("redirect", [">&-", "2>&-", "<&-"])
def test_closed_standard_streams_neither_crash_greenml_nor_reach_the_command_open(
    db: Path, tmp_path: Path, redirect: str
) -> None:
    """``greenml run -- cmd >&-``: the command finds the stream closed, as its user asked,
    greenml stores the run and exits with the command's code, with no traceback."""
    probe = tmp_path / "probe"
    script = (
        "import os, sys\n"
        "fds = ','.join(str(int(os.path.exists('/proc/self/fd/%d' % n))) for n in (0, 1, 2))\n"
        f"open({str(probe)!r}, 'w').write(fds)\n"
        "sys.exit(3)\n"
    )
    line = f"{PY} -m greenml run -q -- {PY} -c \"$SCRIPT\" {redirect}"
    env = {**os.environ, "GREENML_DB": str(db), "SCRIPT": script}
    done = subprocess.run(["sh", "-c", line], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 3
    assert "Traceback" not in done.stderr
    fd = {">&-": 1, "2>&-": 2, "<&-": 0}[redirect]
    assert probe.read_text().split(",")[fd] == "0"  # closed in the command too
    assert newest_run(db)["status"] == "failed"


def test_a_failure_after_the_command_started_keeps_its_exit_code_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Whatever breaks inside greenml once the command runs, the command finishes, its
    exit code comes back, and greenml says the run was not measured: no traceback."""
    from greenml.run import runner

    def broken_meter(*args: object, **kwargs: object) -> None:
        raise OverflowError("math range error")

    monkeypatch.setattr(runner, "Meter", broken_meter)
    script = "import time; time.sleep(0.2); raise SystemExit(5)"
    options = runner.RunOptions(command=[PY, "-c", script], db_url=str(tmp_path / "runs.db"))
    result = runner.run_measured(options)
    assert result.exit_code == 5
    assert result.record is None and result.store_error is not None
    assert "OverflowError" in result.store_error
    assert "the command runs on unmeasured" in capsys.readouterr().err


def test_runs_show_has_windows_projection_and_notes_and_list_json_has_tags(
    db: Path, tmp_path: Path
) -> None:
    script = (
        "import time, greenml\n"
        "from greenml.measure.meter import Meter\n"
        "m = Meter(gpus=[], sample_hz=0, publish_windows=True)\n"
        "for i in range(3):\n"
        "    with m.window('epoch'):\n"
        "        time.sleep(0.05)\n"
        "    greenml.progress(i + 1, 6)\n"
    )
    done = greenml(db, "run", "-q", "--tag", "lr=3e-4", "--", PY, "-c", script)
    assert done.returncode == 0, done.stderr
    row = newest_run(db)
    assert row["tags"] == {"lr": "3e-4"}
    shown = greenml(db, "runs", "show", str(row["id"]))
    assert shown.returncode == 0, shown.stderr
    assert "windows: 4" in shown.stdout and "epoch/rank0:" in shown.stdout
    assert "projection:" in shown.stdout and "(reported 50 % done)" in shown.stdout
    assert "note:" in shown.stdout


def test_reading_creates_no_folder_and_no_database(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg"),
           "GREENML_SPOOL_DIR": str(tmp_path / "spool")}  # fmt: skip
    env.pop("GREENML_DB", None)
    named = tmp_path / "missing" / "runs.db"
    readers = (["runs", "list", "--db", str(named)], ["report", "--tag", "a=b", "--db", str(named)])
    for args in readers:
        done = subprocess.run([PY, "-m", "greenml", *args], capture_output=True, text=True,
                              env=env, timeout=60)  # fmt: skip
        assert done.returncode == 2 and "no run store at" in done.stderr, done.stderr
    default = subprocess.run([PY, "-m", "greenml", "runs", "list"], capture_output=True,
                             text=True, env=env, timeout=60)  # fmt: skip
    assert default.returncode == 0 and "no runs stored yet" in default.stdout
    assert not (tmp_path / "missing").exists() and not (tmp_path / "xdg").exists()

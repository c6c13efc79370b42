"""``greenml run --when green``: wait for the planned start, pause between chunks, record it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pytest

from greenml.accounting import location
from greenml.cli import main

PY = sys.executable
T0 = datetime(2026, 1, 5, tzinfo=timezone.utc).timestamp()  # the fake clock's start
# A greenml process whose planning clock runs K times faster than the wall clock: the
# same code as the `greenml` command, with greenml.run.green's clock and sleep injected.
FAST_GREENML = """
import sys, time
import greenml.run.green as w
t0, k, r0 = float(sys.argv[1]), float(sys.argv[2]), time.time()
w.CLOCK = lambda: t0 + k * (time.time() - r0)
w.SLEEP = lambda seconds: time.sleep(seconds / k)
from greenml.cli import main
sys.exit(main(sys.argv[3:]))
"""
WORKER = """
import sys, time
stamps = []
for _ in range(int(sys.argv[1])):
    stamps.append(time.monotonic())
    time.sleep(0.03)
print(max(b - a for a, b in zip(stamps, stamps[1:])))
sys.exit(3)
"""


@pytest.fixture(autouse=True)
def no_user_location(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in location.ENV_VARS.values():
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(location, "default_config_path", lambda: tmp_path / "none.toml")


def write_trace(path: Path, first_s: float, step_s: float, count: int, dips: list) -> Path:
    """``Time,Carbon Intensity`` rows: 300 g/kWh, 100 inside the (start, end) dips."""
    rows = ["Time,Carbon Intensity"]
    for i in range(count):
        t = first_s + i * step_s
        value = 100 if any(a <= t < b for a, b in dips) else 300
        rows.append(f"{datetime.fromtimestamp(t, tz=timezone.utc).isoformat()},{value}")
    path.write_text("\n".join(rows) + "\n")
    return path


def run_greenml(
    args: list[str], db: Path, prefix: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GREENML_DB": str(db)}
    command = prefix or [PY, "-m", "greenml"]
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, env=env, timeout=60
    )


def stored(db: Path, run_id: str) -> dict:
    from greenml.store import open_store

    store = open_store(str(db))
    try:
        return store.get_record(run_id)
    finally:
        store.close()


def test_waits_for_the_planned_start_then_runs_and_records_the_plan(tmp_path: Path) -> None:
    now = time.time()
    first = float(int(now)) - 30
    trace = write_trace(tmp_path / "t.csv", first, 1.0, 120, [(now + 2.5, now + 6)])
    out = tmp_path / "run.json"
    done = run_greenml(
        ["run", "--when", "green", "--deadline", "+40s", "--duration", "3s", "--zone", "DE",
         "--intensity-trace", str(trace), "--json-out", str(out), "--",
         PY, "-c", "import sys, time; print(time.time()); sys.exit(4)"],
        tmp_path / "runs.db",
    )  # fmt: skip
    assert done.returncode == 4, done.stderr  # the command's exit code passes through
    record = json.loads(out.read_text())
    schedule = record["schedule"]
    planned = datetime.fromisoformat(schedule["start"].replace("Z", "+00:00")).timestamp()
    assert now + 1.5 < planned < now + 4
    assert float(done.stdout) >= planned - 0.05  # the command started at the planned time
    assert schedule["mean_intensity_g_per_kwh"] == 100.0 and schedule["interruptible"] is False
    assert schedule["executed"]["waited_s"] > 0.5
    assert "starts" in done.stderr and "trace file t.csv" in done.stderr
    assert "schedule: waited" in done.stderr
    # The plan is in the stored record only when the runner takes it before storing and
    # ledgering the run (RunOptions.extra); a record changed afterwards would fail the ledger.
    db = tmp_path / "runs.db"
    assert stored(db, record["id"]).get("schedule") == schedule
    verified = run_greenml(["ledger", "verify", "--db", str(db)], db)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "ledger OK: 1 entries" in verified.stdout


def test_an_interruptible_run_is_paused_between_its_chunks(tmp_path: Path) -> None:
    k = 480.0  # one wall-clock second is eight planned minutes
    minute = 60.0
    chunk1, chunk2 = (T0 + 16 * minute, T0 + 28 * minute), (T0 + 48 * minute, T0 + 60 * minute)
    trace = write_trace(tmp_path / "t.csv", T0 - 60 * minute, minute, 180, [chunk1, chunk2])
    out = tmp_path / "run.json"
    done = run_greenml(
        ["run", "--when", "green", "--earliest-start", "2026-01-05T00:16:00Z",
         "--deadline", "2026-01-05T01:40:00Z", "--duration", "24m", "--interruptible",
         "--min-chunk", "12m", "--max-pieces", "2", "--zone", "DE",
         "--intensity-trace", str(trace), "--json-out", str(out), "--", PY, "-c", WORKER, "100"],
        tmp_path / "runs.db",
        prefix=[PY, "-c", FAST_GREENML, str(T0), str(k)],
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    schedule = json.loads(out.read_text())["schedule"]
    starts = [c["start"] for c in schedule["chunks"]]
    assert starts == ["2026-01-05T00:16:00Z", "2026-01-05T00:48:00Z"]
    executed = schedule["executed"]
    assert len(executed["pauses"]) == 1 and executed["abandoned"] is None
    assert 10 * minute < executed["paused_s"] < 30 * minute  # 20 planned minutes, ±1 s tick
    assert float(done.stdout) > 1.2  # the worker's own clock stood still for the pause
    assert "2 pieces, paused in between" in done.stderr and "paused 1×" in done.stderr


def test_duration_comes_from_the_last_run_of_the_same_name(tmp_path: Path) -> None:
    from greenml.schedule.green import GreenRequest, make_plan
    from greenml.store import open_store

    db = tmp_path / "runs.db"
    store = open_store(str(db))
    store.create_run(name="etl", command=["etl"], tags={}, started_at=T0 - 86400, pid=1,
                     hostname=None, run_id="aaa111")  # fmt: skip
    store.finish_run("aaa111", status="completed", exit_code=0, duration_s=5400.0,
                     ended_at=T0 - 81000, energy={})  # fmt: skip
    store.close()
    trace = write_trace(tmp_path / "t.csv", T0 - 3600, 3600.0, 30, [(T0 + 7200, T0 + 4 * 3600)])
    request = GreenRequest(deadline="+20h", zone="DE", intensity_trace=str(trace), name="etl",
                           db_url=str(db))  # fmt: skip
    plan = make_plan(request, T0)
    assert plan.job.duration_s == 5400.0
    assert plan.duration_source == "from the previous run aaa111 named 'etl'"
    assert "duration 1:30:00 (from the previous run aaa111" in plan.headline(T0)
    assert plan.start_s == T0 + 7200


def test_the_plan_goes_to_the_runner_before_the_run_is_stored(tmp_path: Path) -> None:
    """With the runner's ``extra`` hook, the record's ``schedule`` is the plan and what ran."""
    from greenml.run.green import GreenRun
    from greenml.schedule.green import GreenRequest, make_plan

    @dataclass
    class Options:  # the shape of RunOptions with the hook
        command: tuple[str, ...]
        extra: object = None

    trace = write_trace(tmp_path / "t.csv", T0 - 3600, 3600.0, 30, [(T0 + 7200, T0 + 4 * 3600)])
    request = GreenRequest(deadline="+20h", duration="1h", zone="DE", intensity_trace=str(trace))
    green = GreenRun(make_plan(request, T0), waited_s=7200.0)
    options = Options(("train",))
    green.attach(options)  # type: ignore[arg-type]
    assert callable(options.extra)
    block = options.extra()["schedule"]
    assert block["start"] == "2026-01-05T02:00:00Z" and block["executed"]["waited_s"] == 7200.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--deadline", "+1h"], "apply to --when green"),
        (["--when", "green", "--duration", "1h", "--zone", "DE"], "--deadline is required"),
        (["--when", "green", "--deadline", "+9h", "--zone", "DE", "--intensity-trace", "{trace}"],
         "--duration is required"),
        (["--when", "green", "--deadline", "+9h", "--name", "never-ran", "--zone", "DE"],
         "no completed run named 'never-ran'"),
        (["--when", "green", "--deadline", "+9h", "--duration", "0s", "--zone", "DE"], "positive"),
        (["--when", "green", "--deadline", "+9h", "--duration", "1h", "--zone", "XX-NOWHERE"],
         "unknown grid zone"),
        (["--when", "green", "--deadline", "+9h", "--duration", "1h", "--max-pieces", "2",
          "--zone", "DE", "--intensity-trace", "{trace}"], "apply to --interruptible"),
    ],
)  # fmt: skip
def test_bad_input_stops_before_any_wait(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write_trace(tmp_path / "t.csv", time.time() - 3600, 3600.0, 30, [])
    db = ["--db", str(tmp_path / "runs.db")]
    argv = ["run", *db, *[a.format(trace=trace) for a in args], "--", PY, "-c", "pass"]
    started = time.monotonic()
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("greenml: error: ") and message in err
    assert time.monotonic() - started < 10


def test_a_missing_command_is_refused_before_the_wait(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write_trace(tmp_path / "t.csv", time.time() - 3600, 3600.0, 30, [])
    argv = ["run", "--db", str(tmp_path / "runs.db"), "--when", "green", "--deadline", "+9h",
            "--duration", "1h", "--zone", "DE", "--intensity-trace", str(trace), "--",
            "no-such-command-here"]  # fmt: skip
    assert main(argv) == 2
    assert "command not found: no-such-command-here" in capsys.readouterr().err

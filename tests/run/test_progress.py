"""``greenml.progress`` and published Meter windows, alone and through ``greenml run``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import greenml
from greenml.measure.events import ENV_VAR, EventReader
from greenml.measure.meter import Meter
from greenml.measure.sensors.fake import FakeDevice, FakeSensor


def fake() -> FakeSensor:
    return FakeSensor([FakeDevice("gpu0", [(0, 100)])])


def test_progress_emits_an_event(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "e.jsonl"))
    greenml.progress(3, 10, loss=0.5)
    (event,) = EventReader(tmp_path / "e.jsonl").read_new()
    assert event["kind"] == "progress" and event["step"] == 3 and event["total"] == 10
    assert event["loss"] == 0.5 and event["t"] > 0


def test_meter_publishes_windows(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "e.jsonl"))
    monkeypatch.setenv("RANK", "2")
    with Meter(sensors=[fake()], sample_hz=0, publish_windows=True) as meter:
        meter.begin_window("step")
        m = meter.end_window("step")
    (event,) = EventReader(tmp_path / "e.jsonl").read_new()
    assert event["kind"] == "window" and event["name"] == "step" and event["rank"] == 2
    assert event["energy_j"] == pytest.approx(m.total_j)
    assert event["end_s"] - event["start_s"] == pytest.approx(m.duration_s, abs=2e-6)


def test_publishing_outside_greenml_run_writes_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without GREENML_EVENTS a publishing Meter writes no event anywhere."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.chdir(tmp_path)
    meter = Meter(sensors=[fake()], sample_hz=0, publish_windows=True)
    meter.begin_window("w", sync_execution=False)
    measured = meter.end_window("w", sync_execution=False)
    assert measured.name == "w"
    assert list(tmp_path.iterdir()) == []


def test_greenml_run_records_progress_and_windows(tmp_path: Path) -> None:
    script = (
        "import time, greenml\n"
        "from greenml.measure.meter import Meter\n"
        "m = Meter(gpus=[], sample_hz=0, publish_windows=True)\n"
        "for i in range(10):\n"
        "    with m.window('step'):\n"
        "        time.sleep(0.02)\n"
        "    greenml.progress(i + 1, 10)\n"
    )
    out = tmp_path / "out.json"
    env = {**os.environ, "GREENML_DB": str(tmp_path / "runs.db")}
    done = subprocess.run(
        [sys.executable, "-m", "greenml", "run", "-q", "--json-out", str(out), "--gpus", "none",
         "--", sys.executable, "-c", script],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = json.loads(out.read_text())
    progress = record["progress"]
    assert progress["step"] == 10 and progress["total"] == 10 and progress["reports"] == 10
    projection = progress["projection"]
    assert projection["fraction"] == 1.0
    assert projection["total_energy_j"]["value"] == pytest.approx(projection["energy_j"])
    from greenml.store import open_store

    with open_store(str(tmp_path / "runs.db")) as store:
        names = [w["name"] for w in store.windows(record["id"])]
    assert names[0] == "run" and names[1:] == ["step/rank0"] * 10


@pytest.mark.parametrize("step, total", [(float("nan"), 10), (1, float("inf")), (10**400, 1),
                                         (-1, 10), (1, 0), ("x", 10)])  # fmt: skip
def test_a_bad_progress_report_is_refused_in_the_program_with_one_warning(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture,
    step: object, total: object,
) -> None:  # fmt: skip
    from greenml.measure import events

    monkeypatch.setenv(ENV_VAR, str(tmp_path / "e.jsonl"))
    monkeypatch.setattr(events, "_refused", set())
    greenml.progress(step, total)  # type: ignore[arg-type]
    greenml.progress(step, total)  # type: ignore[arg-type]
    assert not (tmp_path / "e.jsonl").exists() or EventReader(tmp_path / "e.jsonl").read_new() == []
    assert len([r for r in caplog.records if "ignored" in r.getMessage()]) == 1


def test_hand_written_non_finite_events_are_counted_not_stored(tmp_path: Path) -> None:
    from greenml.run.projection import ProgressTracker

    path = tmp_path / "e.jsonl"
    lines = ['{"kind":"progress","t":100.5,"step":NaN,"total":10}',
             '{"kind":"progress","t":100.6,"step":1,"total":1e400}',
             '{"kind":"progress","t":100.7,"step":' + "9" * 400 + ',"total":1}',
             '{"kind":"progress","t":101,"step":1,"total":4}',
             '{"kind":"progress","t":102,"step":2,"total":4}']  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    tracker = ProgressTracker(str(path), 100.0)
    tracker.poll(50.0, 103.0)
    summary = tracker.summary()
    assert summary is not None
    assert summary["bad_event_lines"] == 3 and summary["reports"] == 2
    assert json.dumps(summary, allow_nan=False)  # valid JSON: no NaN, no Infinity

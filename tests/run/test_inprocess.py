"""``greenml.Run``: an in-process run stored with carbon, cost, windows and its projection."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

import greenml
from greenml.measure.events import ENV_VAR, EventReader
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from greenml.store import open_store

WATTS = 300.0


def fake() -> FakeSensor:
    return FakeSensor([FakeDevice("gpu0", [(0, WATTS)])])


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("GREENML_DB", ENV_VAR, "GREENML_ZONE", "GREENML_CI", "GREENML_PUE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("GREENML_SPOOL_DIR", str(tmp_path / "spool"))


def test_a_run_is_stored_with_carbon_cost_windows_and_projection(tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    with greenml.Run("bert", ci=400, pue=1.5, price=0.2, tags={"lr": 3e-5}, db=db,
                     sensors=[fake()], tick_s=0.02) as run:  # fmt: skip
        for epoch in range(3):
            with run.window("epoch") as w:
                time.sleep(0.03)
            assert w.measurement is not None and w.measurement.total_j > 0
            run.progress(epoch + 1, 6)
            time.sleep(0.03)
    record = run.record
    assert record is not None and record.status == "completed" and record.name == "bert"
    assert record.tags == {"lr": "3e-05"}
    kwh = record.energy.total_kwh
    assert record.energy.total_j == pytest.approx(WATTS * record.duration_s, rel=0.05)
    assert record.carbon is not None and record.carbon.kg == pytest.approx(kwh * 1.5 * 0.4)
    assert record.cost is not None and record.cost.usd == pytest.approx(kwh * 1.5 * 0.2)
    assert [w.name for w in record.windows] == ["run", "epoch", "epoch", "epoch"]
    assert record.progress is not None and record.progress.step == 3
    projection = record.progress.projection
    assert projection is not None and projection.total == 6
    # about twice what three of six epochs cost (the epochs dominate the run)
    assert projection.total_energy_j.value > 1.5 * record.windows[1].energy_j * 3
    with open_store(db) as store:  # stored, and read back the same
        assert store.get_run_record(record.id).to_dict() == record.to_dict()


def test_start_and_stop_without_a_with_block(tmp_path: Path) -> None:
    run = greenml.Run(sensors=[fake()], db=str(tmp_path / "r.db")).start()
    time.sleep(0.02)
    first = run.stop()
    assert first is not None and first.energy.total_j > 0
    assert run.stop() is first  # a second stop changes nothing


def test_an_exception_in_the_block_is_stored_as_failed_and_raised(tmp_path: Path) -> None:
    db = str(tmp_path / "r.db")
    with pytest.raises(ZeroDivisionError), greenml.Run(sensors=[fake()], db=db) as run:
        _ = 1 / 0
    assert run.record is not None and run.record.status == "failed"


def test_a_bad_zone_is_one_warning_and_a_labelled_carbon_gap(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, "greenml"), greenml.Run(
        zone="NOT-A-ZONE", sensors=[fake()], db=str(tmp_path / "r.db")
    ) as run:
        pass
    assert run.record is not None and run.record.carbon is not None
    carbon = run.record.carbon
    assert carbon.status == "unavailable" and "NOT-A-ZONE" in (carbon.reason or "")
    assert sum("NOT-A-ZONE" in r.getMessage() for r in caplog.records) == 1


def test_a_store_that_cannot_be_written_never_reaches_the_training_code(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with caplog.at_level(logging.WARNING, "greenml"), greenml.Run(
        sensors=[fake()], db=str(blocker / "sub" / "r.db")
    ) as run, run.window("epoch") as w:
        pass
    assert run.record is None and w.measurement is not None
    assert any("not stored" in n for n in run.notes)


def test_progress_and_published_windows_of_the_process_reach_the_run(tmp_path: Path) -> None:
    with greenml.Run(sensors=[fake()], db=str(tmp_path / "r.db"), tick_s=0.02) as run:
        meter = greenml.Meter(sensors=[fake()], sample_hz=0, publish_windows=True)
        with meter.window("step"):
            time.sleep(0.01)
        meter.close()
        greenml.progress(1, 4)
        time.sleep(0.03)
        greenml.progress(2, 4)
    assert run.record is not None
    assert [w.name for w in run.record.windows] == ["run", "step/rank0"]
    assert run.record.progress is not None and run.record.progress.step == 2


def test_inside_greenml_run_it_joins_the_outer_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "events.jsonl"))
    db = tmp_path / "r.db"
    with greenml.Run("inner", sensors=[fake()], db=str(db), budget_kwh=1.0) as run:
        with run.window("epoch"):
            time.sleep(0.01)
        run.progress(1, 2)
    assert run.joined and run.record is None and not db.exists()  # the parent stores it
    assert any("--budget of the outer run applies" in n for n in run.notes)
    kinds = [(e["kind"], e.get("name")) for e in EventReader(tmp_path / "events.jsonl").read_new()]
    assert kinds == [("window", "epoch"), ("progress", None)]


def test_a_misused_constructor_raises_at_once() -> None:
    with pytest.raises(greenml.GreenmlError, match="one budget"):
        greenml.Run(budget_kwh=1, budget_kg=1)
    with pytest.raises(greenml.GreenmlError, match="on_budget"):
        greenml.Run(on_budget="explode")


def test_a_failing_start_is_one_warning_and_the_training_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from greenml.run import inprocess

    def no_meter(self: object) -> None:
        raise OSError("no sensor at all")

    monkeypatch.setattr(inprocess.Run, "_open_meter", no_meter)
    with caplog.at_level(logging.WARNING, "greenml"), greenml.Run(
        db=str(tmp_path / "r.db")
    ) as run, run.window("epoch") as w:
        run.progress(1, 2)
    assert run.record is None and w.measurement is None and inprocess.current_run() is None
    assert [r.getMessage() for r in caplog.records] == [
        "greenml: the run is not measured: OSError('no sensor at all')"
    ]


def test_a_greenml_Run_says_in_one_line_what_it_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 29: `with greenml.Run(...)` finished silently; now one line says where the run
    went (and, with a team server, whether it was sent)."""
    db = tmp_path / "r.db"
    with greenml.Run("said", db=str(db), sensors=[fake()], tick_s=0.02) as run:
        time.sleep(0.02)
    assert run.record is not None
    lines = capsys.readouterr().err.splitlines()
    said = [line for line in lines if line.startswith(f"greenml: run {run.record.id}")]
    assert len(said) == 1, lines
    assert "'said' completed" in said[0] and " J;" in said[0]
    assert f"stored in sqlite:///{db}" in said[0]

"""``greenml.runs()`` and ``greenml runs export --all``: one row per run, the same columns."""

from __future__ import annotations

import csv
import io
import json
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import greenml
from greenml.cli import main
from greenml.errors import ConfigError
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from greenml.run.tables import table_rows
from greenml.store import open_store
from greenml.store.table import columns, run_row


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("GREENML_SPOOL_DIR", str(tmp_path / "spool"))
    for var in ("GREENML_DB", "GREENML_EVENTS", "GREENML_PRICE", "GREENML_PUE"):
        monkeypatch.delenv(var, raising=False)
    path = str(tmp_path / "runs.db")
    devices = [FakeDevice("gpu0", [(0, 200.0)]), FakeDevice("cpu0", [(0, 50.0)])]
    with greenml.Run("a", ci=400, pue=1.2, tags={"exp": "1"}, db=path,
                     sensors=[FakeSensor(devices)]):  # fmt: skip
        time.sleep(0.02)
    with greenml.Run("b", db=path, sensors=[FakeSensor([FakeDevice("gpu0", [(0, 100.0)])])]):
        time.sleep(0.02)
    return path


def test_runs_is_a_dataframe_with_a_row_per_run(db: str) -> None:
    pytest.importorskip("pandas")
    frame = greenml.runs(db=db)
    assert list(frame["name"]) == ["a", "b"]  # oldest first
    a, b = frame.iloc[0], frame.iloc[1]
    assert a["energy_kwh"] == pytest.approx(a["energy_gpu_kwh"] + a["energy_cpu_kwh"])
    assert a["energy_gpu_kwh"] == pytest.approx(4 * a["energy_cpu_kwh"], rel=0.05)
    assert a["co2_kg"] == pytest.approx(a["energy_kwh"] * 1.2 * 0.4)
    assert a["pue"] == 1.2 and a["location"] == "--ci 400" and a["tags"] == "exp=1"
    assert a["methods"] == "gpu:counter;cpu:counter"
    assert b["co2_kg"] is None or b["co2_kg"] != b["co2_kg"]  # unknown: empty, never 0
    assert list(greenml.runs(db=db, name="b")["name"]) == ["b"]
    assert list(greenml.runs(db=db, tag="exp=1")["name"]) == ["a"]
    assert len(greenml.runs(db=db, since=datetime.now(timezone.utc).isoformat())) == 0


def test_export_all_as_csv_has_the_same_columns(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["runs", "export", "--all", "--format", "csv", "--db", db]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    with open_store(db) as store:
        expected = table_rows(store)
    assert [r["name"] for r in rows] == ["a", "b"]
    assert list(rows[0]) == columns(expected)
    assert float(rows[0]["co2_kg"]) == pytest.approx(expected[0]["co2_kg"])
    assert rows[1]["co2_kg"] == ""


def test_export_all_as_parquet_reads_back(db: str, tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    out = tmp_path / "runs.parquet"
    assert main(["runs", "export", "--all", "--format", "parquet", "-o", str(out), "--db", db]) == 0
    frame = pd.read_parquet(out)
    assert list(frame["name"]) == ["a", "b"] and "energy_gpu_kwh" in frame.columns


@pytest.mark.parametrize(
    ("argv", "said"),
    [(["runs", "export", "--all", "--format", "parquet"], "give -o FILE"),
     (["runs", "export"], "give a RUN_ID or --all"),
     (["runs", "export", "abc", "--format", "parquet"], "for --all")],
)  # fmt: skip
def test_bad_export_is_one_line(
    db: str, argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--db", db]) == 2
    assert said in capsys.readouterr().err


@given(st.text(max_size=30))
def test_any_since_text_is_a_time_or_a_config_error(text: str) -> None:
    from greenml.run import tables

    try:
        when = tables.since_time(text)
    except ConfigError as exc:
        assert "ISO 8601" in str(exc)
    else:
        assert when is not None and when.tzinfo is not None


def test_a_row_from_a_record_without_blocks_has_empty_figures() -> None:
    row = run_row({"id": "x", "status": "running"})
    assert row["energy_kwh"] is None and row["co2_kg"] is None and row["methods"] == ""
    assert json.dumps(row)

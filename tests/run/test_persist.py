"""One finished-run value and one way to store it, for the recorder and the spool alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from greenml.errors import StoreError
from greenml.run.persist import FinishedRun, persist_run
from greenml.store import open_store
from tests.run.test_spool import payload


@pytest.fixture(autouse=True)
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "ledger.jsonl"
    monkeypatch.setenv("GREENML_LEDGER", str(path))
    monkeypatch.delenv("GREENML_LEDGER_KEY", raising=False)
    return path


def test_a_finished_run_is_its_spool_json(tmp_path: Path) -> None:
    written = payload(tmp_path / "runs.db")
    del written["db_url"]
    finished = FinishedRun.from_dict(written)
    assert finished.window.total_j == 30.0 and len(finished.samples) == 4
    again = finished.to_dict()
    assert again == {**written, "windows": [], "extra": {}}
    assert FinishedRun.from_dict(again) == finished


def test_a_spool_file_of_a_newer_format_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="newer"):
        FinishedRun.from_dict({**payload(tmp_path / "runs.db"), "version": 2})


def test_a_run_the_recorder_created_is_finished_not_created_again(
    tmp_path: Path, ledger: Path
) -> None:
    finished = FinishedRun.from_dict(payload(tmp_path / "runs.db"))
    with open_store(str(tmp_path / "runs.db")) as store:
        store.create_run(name="early", command=["true"], tags={}, started_at=1.7e9, pid=1,
                         hostname=None, run_id=finished.run_id)  # fmt: skip
        record = persist_run(store, finished)
        assert record is not None and record.status == "completed"
        assert record.name == "early"  # the row the recorder wrote at the start
        assert record.energy.notes == ["a note"] and [w.name for w in record.windows] == ["run"]
        assert len(store.list_runs()) == 1
    assert len(ledger.read_text().splitlines()) == 1

"""A finished run is read from the local store at most once before it is on the team server.

The run's end hands the finished record to its sinks in memory (store + ledger, then the
upload): counted here with a SQLAlchemy listener on every engine of this process, the
SELECTs on the local store from the moment the run finishes until the upload is done.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

import greenml
from greenml.ledger import verify
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from greenml.run import recorder as recorder_module
from greenml.run.runner import RunOptions, run_measured
from greenml.store import open_store
from tests.server.live import LiveServer
from tests.server.test_upload import live  # noqa: F401 - the fixture

pytest.importorskip("uvicorn")

MAX_READS = 1
"""The issue's bound: the finished run read from the store at most once."""


class Visits:
    """SQL statements run on one store (by its file name) while ``counting`` is set."""

    def __init__(self, db_name: str) -> None:
        self.db_name = db_name
        self.counting = False
        self.statements: list[str] = []

    def __call__(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if self.counting and str(conn.engine.url).endswith(self.db_name):
            self.statements.append(statement)

    @property
    def reads(self) -> list[str]:
        """Reads of the run's rows (the schema version read when a store opens is not one:
        a short run's recorder opens the store at its end)."""
        return [s for s in self.statements if s.lstrip().upper().startswith("SELECT")
                and "FROM meta" not in s]  # fmt: skip


@pytest.fixture
def visits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Visits]:
    monkeypatch.setenv("CI", "true")  # sent before greenml returns (elsewhere: handed off)
    counter = Visits("mine.db")
    event.listen(Engine, "before_cursor_execute", counter)
    finish = recorder_module.Recorder.finish

    def counted_finish(self: Any, *args: Any, **kwargs: Any) -> Any:
        counter.counting = True  # from the run's end until it is stored and sent
        try:
            return finish(self, *args, **kwargs)
        finally:
            counter.counting = False

    monkeypatch.setattr(recorder_module.Recorder, "finish", counted_finish)
    yield counter
    event.remove(Engine, "before_cursor_execute", counter)


def _on_server(server: LiveServer, run_id: str) -> dict[str, Any]:
    import os

    headers = {"Authorization": f"Bearer {os.environ['GREENML_TOKEN']}"}
    got = httpx.get(f"{server.url}/api/v1/runs/{run_id}?points=0", headers=headers, timeout=30)
    assert got.status_code == 200, got.text
    found: dict[str, Any] = got.json()
    return found


def test_greenml_run_with_a_server_reads_the_finished_run_at_most_once(
    live: LiveServer, visits: Visits, tmp_path: Path  # noqa: F811
) -> None:
    live.start(timeout_s=240)
    db = str(tmp_path / "mine.db")
    result = run_measured(RunOptions(
        command=[sys.executable, "-c", "import time; time.sleep(0.3)"], db_url=db,
        wait_for_store=True, sample_hz=20,
    ))  # fmt: skip
    assert result.record is not None and result.exit_code == 0
    print("store statements at the run's end:", len(visits.statements),
          "reads:", len(visits.reads))  # fmt: skip
    assert len(visits.reads) <= MAX_READS, visits.reads
    assert _on_server(live, result.run_id)["ledger"]["matches"] is True
    with open_store(db) as store:
        assert store.get_run_record(result.run_id).to_dict() == result.record.to_dict()
        assert verify(tmp_path / "local.ledger.jsonl", store).ok


def test_greenml_Run_with_a_server_reads_the_finished_run_at_most_once(
    live: LiveServer, visits: Visits, tmp_path: Path  # noqa: F811
) -> None:
    live.start(timeout_s=240)
    db = str(tmp_path / "mine.db")
    sensor = FakeSensor([FakeDevice("gpu0", [(0, 200.0)])])
    run = greenml.Run("visits", db=db, sensors=[sensor], sample_hz=50, tick_s=0.02)
    with run, run.window("step"):
        time.sleep(0.2)
    record = run.record
    assert record is not None
    print("store statements at the run's end:", len(visits.statements),
          "reads:", len(visits.reads))  # fmt: skip
    assert len(visits.reads) <= MAX_READS, visits.reads
    assert _on_server(live, record.id)["ledger"]["matches"] is True
    with open_store(db) as store:
        assert store.get_run_record(record.id).to_dict() == record.to_dict()
        assert verify(tmp_path / "local.ledger.jsonl", store).ok

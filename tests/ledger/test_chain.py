"""Finished runs are ledgered by whichever process stores them, on SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
import logging
from datetime import datetime, timezone
from pathlib import Path

import pytest

from greenml.ledger import GENESIS_HASH, ledger_path, record_sha256, verify
from greenml.ledger.entry import compute_entry_hash
from greenml.measure.meter import Meter
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from greenml.run.recorder import Recorder, RunStart
from greenml.store import open_store
from greenml.store.repository import Store
from greenml.store.url import mask_url, resolve_url
from tests.helpers import ManualClock
from tests.ledger.conftest import TRICKY, add_runs, read


def test_each_spooled_run_is_chained(store: Store, ledger: Path) -> None:
    ids = add_runs(store, 3)
    entries = read(ledger)
    assert [e["seq"] for e in entries] == [1, 2, 3]
    assert [e["run_id"] for e in entries] == ids
    assert entries[0]["prev_hash"] == GENESIS_HASH
    for before, after in itertools.pairwise(entries):
        assert after["prev_hash"] == before["entry_hash"]
    for e in entries:
        assert e["entry_hash"] == compute_entry_hash(e)
        assert datetime.fromisoformat(e["appended_at"]).tzinfo == timezone.utc
        assert "signature" not in e
    result = verify(ledger, store=store)
    assert result.ok, result.problems
    assert (result.count, result.head) == (3, entries[-1]["entry_hash"])


def test_the_hash_is_of_the_record_as_the_store_returns_it(db_url: str, ledger: Path) -> None:
    with open_store(db_url) as store:
        (run_id,) = add_runs(store, 1)
    with open_store(db_url) as reopened:  # a fresh connection: floats and JSON re-read
        record = reopened.get_record(run_id)
    assert record["carbon"]["tricky"] == TRICKY
    assert read(ledger)[0]["record_sha256"] == record_sha256(record)


def test_a_run_stored_in_process_is_ledgered(db_url: str, ledger: Path) -> None:
    clock = ManualClock()
    sensor = FakeSensor([FakeDevice("gpu0", [(0, 100.0), (5, 300.0)], name="FakeGPU")], clock)
    meter = Meter(sensors=[sensor], sample_hz=0, clock=clock, record_samples=True)
    meter.begin_window("run")
    start = RunStart(name="inproc", command=["train"], tags={}, started_at=1.7e9, pid=1,
                     hostname=None, db_url=db_url, include_hostname=False)  # fmt: skip
    recorder = Recorder(start, meter, flush_s=0.05)
    clock.advance(7.0)
    meter.sample_now()
    measurement = meter.end_window("run")
    record = recorder.finish(measurement, exit_code=0, status="completed", ended_at=1.7e9 + 7,
                             wait_for_store=True, extra={"cost": {"usd": 0.1 + 0.2}})  # fmt: skip
    assert record is not None and recorder.error is None
    (entry,) = read(ledger)
    assert entry["run_id"] == recorder.run_id
    assert entry["record_sha256"] == record_sha256(record)
    with open_store(db_url) as store:
        assert verify(ledger, store=store).ok


def test_a_ledger_that_cannot_be_written_costs_the_run_nothing(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("GREENML_LEDGER", str(blocker / "ledger.jsonl"))  # parent is a file
    with caplog.at_level(logging.WARNING, logger="greenml"):
        ids = add_runs(store, 2)
    assert [store.get_record(i)["status"] for i in ids] == ["completed", "completed"]
    warnings = [r.getMessage() for r in caplog.records if "ledger" in r.getMessage()]
    assert len(warnings) == 1  # once per process
    assert f"run {ids[0]} not added to the ledger" in warnings[0]


def test_a_bad_signing_key_leaves_entries_unsigned_not_missing(
    store: Store, ledger: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    monkeypatch.setenv("GREENML_LEDGER_KEY", str(tmp_path / "missing.key"))
    with caplog.at_level(logging.WARNING, logger="greenml"):
        add_runs(store, 2)
    assert len(read(ledger)) == 2
    assert any("not signed" in r.getMessage() for r in caplog.records)


def test_entries_are_signed_with_the_configured_key(
    store: Store, ledger: Path, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GREENML_LEDGER_KEY", str(keys["key"]))
    add_runs(store, 2)
    assert all(e["signature"] and e["key_id"] for e in read(ledger))
    result = verify(ledger, store=store, public_key=keys["pub"])
    assert result.ok and result.signatures_checked == 2


def test_where_the_ledger_lives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GREENML_LEDGER")
    assert ledger_path(str(tmp_path / "runs.db")) == tmp_path / "runs.ledger.jsonl"
    assert ledger_path("sqlite://") is None  # in memory
    pg = ledger_path("postgresql://u:secret@db.example:5432/green")
    other_password = ledger_path("postgresql://u:other@db.example:5432/green")
    other_db = ledger_path("postgresql://u:secret@db.example:5432/blue")
    assert pg is not None and pg.name.startswith("postgresql-db.example-green-")
    assert pg == other_password and pg != other_db
    assert "secret" not in str(pg)
    as_the_store_names_it = mask_url(resolve_url("postgres://u:secret@db.example:5432/green"))
    assert ledger_path(as_the_store_names_it) == pg  # Store.url: masked, psycopg scheme
    monkeypatch.setenv("GREENML_LEDGER", str(tmp_path / "mine.jsonl"))
    assert ledger_path(str(tmp_path / "runs.db")) == tmp_path / "mine.jsonl"


def test_an_in_memory_store_is_not_ledgered(ledger: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GREENML_LEDGER")
    with open_store("sqlite://") as store:
        add_runs(store, 1)
    assert not ledger.exists()

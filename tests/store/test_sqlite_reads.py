"""The SQLAlchemy-free SQLite reader answers exactly as the Store does, or not at all."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from greenml.errors import RunNotFound, StoreError
from greenml.store import open_store
from greenml.store.repository import Store
from greenml.store.sqlite_reads import open_sqlite_reader
from tests.store.conftest import make_measurement


def _finished(store: Store, name: str, started_at: float) -> str:
    run_id = store.create_run(name=name, command=["python", "t.py"], tags={"team": "nlp"},
                              started_at=started_at, pid=os.getpid(), hostname="h")  # fmt: skip
    window = make_measurement()
    store.add_window(run_id, window)
    store.set_environment(run_id, {"python": "3.11"})
    store.update_extra(run_id, {"carbon": {"total_g": 1.5}})
    store.finish_run(run_id, status="completed", exit_code=0, duration_s=2.0,
                     energy=window.to_dict(), ended_at=started_at + 2.0)  # fmt: skip
    return run_id


def test_same_list_and_records_as_the_store(tmp_path: Path) -> None:
    path = tmp_path / "g.db"
    with open_store(str(path)) as store:
        ids = [_finished(store, name, 1_700_000_000.0 + i) for i, name in enumerate("aab")]
        expected_list = store.list_runs(limit=0)
        expected_a = store.list_runs(limit=1, name="a")
        expected = {run_id: store.get_record(run_id) for run_id in ids}
    reader = open_sqlite_reader(path, f"sqlite:///{path}")
    assert reader is not None
    with reader:
        assert reader.list_runs(limit=0) == expected_list
        assert reader.list_runs(limit=1, name="a") == expected_a
        for run_id, record in expected.items():
            assert reader.get_record_dict(run_id[:6]) == record
        with pytest.raises(RunNotFound):
            reader.get_record_dict("zzzz")


def test_ambiguous_prefix_is_the_stores_error(tmp_path: Path) -> None:
    path = tmp_path / "g.db"
    with open_store(str(path)) as store:
        ids = [_finished(store, "r", 1_700_000_000.0 + i) for i in range(40)]
        prefix = max("0123456789abcdef", key=lambda c: sum(i.startswith(c) for i in ids))
        with pytest.raises(StoreError) as theirs:
            store.get_record(prefix)
    assert "ambiguous" in str(theirs.value)
    reader = open_sqlite_reader(path, f"sqlite:///{path}")
    assert reader is not None
    with reader, pytest.raises(StoreError) as ours:
        reader.get_record_dict(prefix.upper())
    assert str(ours.value) == str(theirs.value).replace(repr(prefix), repr(prefix.upper()))


def test_unfinished_runs_are_left_to_the_store(tmp_path: Path) -> None:
    path = tmp_path / "g.db"
    with open_store(str(path)) as store:
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        run_id = store.create_run(name="k", command=["x"], tags={}, started_at=1.0,
                                  pid=dead.pid, hostname="h")  # fmt: skip
    reader = open_sqlite_reader(path, f"sqlite:///{path}")
    assert reader is not None
    with reader:
        assert reader.list_runs() is None  # its energy is integrated from samples by the Store
        assert reader.get_record_dict(run_id) is None


def test_other_schema_or_missing_file_opens_nothing(tmp_path: Path) -> None:
    assert open_sqlite_reader(tmp_path / "none.db", "sqlite:///none") is None
    path = tmp_path / "g.db"
    with open_store(str(path)):
        pass
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    assert open_sqlite_reader(path, f"sqlite:///{path}") is None


def test_job_records_match_the_store(tmp_path: Path) -> None:
    from greenml.store.jobs import job_runs

    path = tmp_path / "g.db"
    with open_store(str(path)) as store:
        for rank in (0, 1):
            run_id = _finished(store, f"n{rank}", 1_700_000_000.0 + rank)
            store.update_extra(run_id, {"job": {"job_id": "J_1%", "node_rank": rank}})
        _finished(store, "other", 1_700_000_100.0)
        expected = [r.to_dict() for r in job_runs(store, "J_1%")]
    reader = open_sqlite_reader(path, f"sqlite:///{path}")
    assert reader is not None
    with reader:
        assert not reader.has_unfinished()
        assert [r.to_dict() for r in job_runs(reader, "J_1%")] == expected
    assert len(expected) == 2

"""Databases written by earlier greenml versions upgrade in place and read back.

``fixtures/schema_vN.db`` were written by the greenml of the commit that
introduced schema N (``fixtures/make_old_db.py``, run with that commit's
``src`` on the path): two finished runs with tags, samples and a window each.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from greenml.store import open_store
from greenml.store.migrations import describe
from greenml.store.schema import SCHEMA_VERSION

FIXTURES = Path(__file__).parent / "fixtures"
OLD_VERSIONS = (1, 2, 3)


def _copy(version: int, tmp_path: Path) -> Path:
    target = tmp_path / f"v{version}.db"
    shutil.copy(FIXTURES / f"schema_v{version}.db", target)
    return target


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_old_database_upgrades_in_place_and_reads(version: int, tmp_path: Path) -> None:
    path = _copy(version, tmp_path)
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT value FROM meta").fetchone() == (str(version),)
        assert "run_tags" not in {r[0] for r in raw.execute("SELECT name FROM sqlite_master")}
    with open_store(str(path)) as store:
        runs = store.list_runs(limit=0)
        assert sorted(r["name"] for r in runs) == ["train-a", "train-b"]
        record = store.get_record(next(r["id"] for r in runs if r["name"] == "train-a"))
        assert record["status"] == "completed"
        assert record["tags"] == {"team": "nlp", "stage": "pretrain"}
        assert record["energy"]["components"]["gpu"]["devices"]["gpu0"]["method"] == "counter"
        assert len(store.samples(record["id"])) == 5
        assert store.sample_columns(record["id"])["power_w"].tolist() == [200, 201, 202, 203, 204]
        # the tags written by the old code are in the new index
        assert [r["name"] for r in store.list_runs(tag={"team": "vision"})] == ["train-b"]
        assert store.list_runs(tag={"team": "nlp", "stage": "x"}) == []
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT value FROM meta").fetchone() == (str(SCHEMA_VERSION),)
        columns = {r[1] for r in raw.execute("PRAGMA table_info(runs)")}
        assert "project_id" in columns
        assert raw.execute("SELECT count(*) FROM run_tags").fetchone() == (3,)


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_upgraded_database_takes_new_runs(version: int, tmp_path: Path) -> None:
    path = _copy(version, tmp_path)
    with open_store(str(path)) as store:
        run_id = store.create_run(name="new", command=["x"], tags={"team": "nlp"},
                                  started_at=1.0e9, pid=1, hostname="h")  # fmt: skip
        assert {r["id"] for r in store.list_runs(tag={"team": "nlp"})} >= {run_id}
    with open_store(str(path)) as again:  # a second open finds nothing to do
        assert len(again.list_runs(limit=0)) == 3


def test_v4_database_gains_the_llm_table(tmp_path: Path) -> None:
    """Schema 4 → 5 adds ``llm_requests``; the runs, projects and tags stay as they were."""
    path = _copy(4, tmp_path)
    with sqlite3.connect(path) as raw:
        assert "llm_requests" not in {r[0] for r in raw.execute("SELECT name FROM sqlite_master")}
    with open_store(str(path)) as store:
        assert sorted(r["name"] for r in store.list_runs(limit=0)) == ["train-a", "train-b"]
        assert [r["name"] for r in store.list_runs(tag={"team": "vision"})] == ["train-b"]
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT value FROM meta").fetchone() == (str(SCHEMA_VERSION),)
        assert raw.execute("SELECT count(*) FROM llm_requests").fetchone() == (0,)


def test_every_version_has_a_step_and_a_fixture() -> None:
    steps = describe()
    assert [s["from"] for s in steps] == list(range(1, SCHEMA_VERSION))
    assert all((FIXTURES / f"schema_v{v}.db").exists() for v in range(1, SCHEMA_VERSION))


@pytest.mark.postgres
def test_v3_postgres_database_upgrades(pg_url: str) -> None:
    """A PostgreSQL database with the schema-3 tables (``runs`` as greenml 3 made it) upgrades."""
    import sqlalchemy as sa

    from greenml.store import schema
    from greenml.store.url import resolve_url

    engine = sa.create_engine(resolve_url(pg_url))
    with engine.begin() as conn:  # the schema-3 DDL, as SQLAlchemy emitted it for greenml 3
        conn.execute(sa.text(
            "CREATE TABLE meta (key VARCHAR(64) PRIMARY KEY, value TEXT NOT NULL);"
            "CREATE TABLE runs (id VARCHAR(32) PRIMARY KEY, name VARCHAR(255),"
            " command TEXT NOT NULL,"
            " tags TEXT NOT NULL, status VARCHAR(16) NOT NULL,"
            " started_at DOUBLE PRECISION NOT NULL,"
            " ended_at DOUBLE PRECISION, heartbeat_at DOUBLE PRECISION NOT NULL,"
            " duration_s DOUBLE PRECISION, exit_code INTEGER, pid INTEGER NOT NULL,"
            " hostname VARCHAR(255), energy TEXT, environment TEXT, extra TEXT NOT NULL);"
            "INSERT INTO meta VALUES ('schema_version', '3');"
            "INSERT INTO runs VALUES ('abc123', 'old', '[\"x\"]',"
            " '{\"team\": \"nlp\"}', 'completed',"
            " 1.0e9, 1.0e9, 1.0e9, 1.0, 0, 1, 'h', NULL, NULL, '{}');"
        ))  # fmt: skip
        for table in (schema.windows, schema.samples, schema.sample_blocks, schema.advisor_state):
            table.create(conn)  # unchanged since schema 3
    engine.dispose()
    with open_store(pg_url) as store:
        assert [r["id"] for r in store.list_runs(tag={"team": "nlp"})] == ["abc123"]
        assert store.get_record("abc123")["name"] == "old"

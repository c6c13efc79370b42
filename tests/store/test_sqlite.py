"""SQLite specifics: pragmas, persistence, and files that cannot be used."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from greenml.errors import StoreError
from greenml.store import open_store


def test_wal_busy_timeout_and_synchronous(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "g.db")) as store:
        assert store._engine is not None
        with store._engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 10000
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1


def test_plain_path_creates_parent_dirs_and_persists(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "runs.db"
    with open_store(str(path)) as store:
        run_id = store.create_run(
            name="x", command=["x"], tags={}, started_at=1.0, pid=1, hostname=None
        )
    assert path.is_file()
    with open_store(f"sqlite:///{path}") as store:
        assert store.get_record(run_id)["name"] == "x"


def test_corrupt_file_is_one_line_store_error_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "corrupt.db"
    garbage = b"\x00not sqlite\xff" + os.urandom(8192)
    path.write_bytes(garbage)
    with pytest.raises(StoreError) as err:
        open_store(str(path))
    message = str(err.value)
    assert "\n" not in message
    assert str(path) in message
    assert "file is not a database" in message
    assert path.read_bytes() == garbage


def test_path_under_a_regular_file(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("I am a file")
    with pytest.raises(StoreError) as err:
        open_store(str(blocker / "greenml.db"))
    assert "\n" not in str(err.value)
    assert str(blocker / "greenml.db") in str(err.value)
    assert blocker.read_text() == "I am a file"


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root ignores directory permissions"
)
def test_directory_without_write_permission(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(StoreError, match="Permission denied") as err:
            open_store(str(locked / "greenml.db"))
        assert "\n" not in str(err.value)
    finally:
        locked.chmod(0o700)


def test_read_only_database_file(tmp_path: Path) -> None:
    path = tmp_path / "ro.db"
    with open_store(str(path)) as store:
        store.create_run(name="x", command=[], tags={}, started_at=1.0, pid=1, hostname=None)
    path.chmod(0o400)
    try:
        if os.access(path, os.W_OK):
            pytest.skip("running as root: file permissions are not enforced")
        with pytest.raises(StoreError, match="cannot"), open_store(str(path)) as store:
            store.create_run(name="y", command=[], tags={}, started_at=2.0, pid=1, hostname=None)
    finally:
        path.chmod(0o600)


def test_a_folder_greenml_creates_for_the_store_is_private(tmp_path: Path) -> None:
    from greenml.store import open_store

    with open_store(str(tmp_path / "new" / "runs.db")):
        pass
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o700

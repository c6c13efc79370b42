"""Engine set-up for the run store: SQLite pragmas, schema creation, error messages."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, inspect, select, text, update
from sqlalchemy.exc import DBAPIError, IntegrityError, SQLAlchemyError

from greenml.errors import StoreError
from greenml.store.schema import SCHEMA_VERSION, meta, metadata
from greenml.store.url import refuse_special_file, sqlite_path

WRITE_OPTION = "greenml_write"
"""Execution option marking a write transaction (SQLite: ``BEGIN IMMEDIATE``)."""

BUSY_TIMEOUT_MS = 10_000
_PG_INIT_LOCK = 0x67726E6D6C  # advisory lock key ("grnml"): one schema creator at a time


def make_engine(url: str) -> Engine:
    """An engine for a resolved URL; SQLite gets WAL, a busy timeout and real BEGINs.

    Raises:
        OSError: The SQLite file's directory cannot be created.
        ConfigError: The SQLite path names something other than a regular file
            (``/dev/null``, a folder, a FIFO): SQLite would write beside it.
    """
    path = sqlite_path(url)
    if path is not None and read_only(path):
        engine = create_engine("sqlite://", creator=lambda: _connect_read_only(path))
        _configure_sqlite(engine, wal=False)
        return engine
    if path is not None:
        refuse_special_file(path)
        _make_parent(path)
        engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})
        _configure_sqlite(engine)
        return engine
    if url.startswith("sqlite"):
        engine = create_engine(url)
        _configure_sqlite(engine)
        return engine
    connect_args: dict[str, Any] = {}
    if "connect_timeout" not in url:
        connect_args["connect_timeout"] = 10
    return create_engine(url, connect_args=connect_args, pool_pre_ping=True)


def read_only(path: Path) -> bool:
    """Whether a store file exists but it, or its folder (its -wal/-shm), cannot be written."""
    if not path.is_file():
        return False
    return not os.access(path, os.W_OK) or not os.access(path.parent, os.W_OK | os.X_OK)


def _connect_read_only(path: Path) -> Any:
    """A read-only connection: ``mode=ro``; ``immutable=1`` where WAL's -shm cannot be made."""
    import sqlite3
    from urllib.parse import quote

    target = "file:" + quote(str(path))
    try:
        conn = sqlite3.connect(f"{target}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                               check_same_thread=False)  # fmt: skip
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return conn
    except sqlite3.OperationalError:
        return sqlite3.connect(f"{target}?immutable=1", uri=True, check_same_thread=False)


def _make_parent(path: Path) -> None:
    """Create the database file's directory, naming a blocking regular file clearly."""
    for ancestor in path.parents:
        if ancestor.exists():
            if not ancestor.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, "Not a directory", str(ancestor))
            break
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # a folder greenml makes is private
    if not path.exists() and not os.access(path.parent, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, "Permission denied", str(path.parent))


def _configure_sqlite(engine: Engine, wal: bool = True) -> None:
    """Pragmas on every connection; take over BEGIN so writes can be IMMEDIATE.

    pysqlite's own transaction handling starts transactions late (before the first
    write), which breaks read-modify-write atomicity and gives instant "database is
    locked" errors under concurrent writers. We emit BEGIN ourselves instead.
    """

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            if wal:  # a read-only store is read in the mode it was left in
                cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA foreign_keys=ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get(WRITE_OPTION, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def init_schema(engine: Engine, display_url: str) -> None:
    """Create the tables, or upgrade an older database in place; refuse a newer one.

    Args:
        engine: The store's engine.
        display_url: The URL to name in errors (password masked).

    Raises:
        StoreError: The database was written by a newer greenml.
    """
    with engine.connect() as conn, conn.begin():
        version = _stored_version(conn)
    if version == SCHEMA_VERSION:
        return
    _check_version(version, display_url)
    with engine.connect() as conn:
        conn.execution_options(**{WRITE_OPTION: True})
        with conn.begin():
            if engine.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_INIT_LOCK})
            version = _stored_version(conn)
            _check_version(version, display_url)
            if version is None:
                metadata.create_all(conn)
                conn.execute(meta.insert().values(key="schema_version", value=str(SCHEMA_VERSION)))
            elif version < SCHEMA_VERSION:
                from greenml.store.migrations import upgrade

                upgrade(conn, version)
                conn.execute(
                    update(meta)
                    .where(meta.c.key == "schema_version")
                    .values(value=str(SCHEMA_VERSION))
                )


def _stored_version(conn: Any) -> int | None:
    if not inspect(conn).has_table("meta"):
        return None
    value = conn.execute(select(meta.c.value).where(meta.c.key == "schema_version")).scalar()
    return None if value is None else int(value)


def _check_version(version: int | None, display_url: str) -> None:
    if version is not None and version > SCHEMA_VERSION:
        raise StoreError(
            f"cannot open run store {display_url}: database schema version {version} "
            f"is newer than this greenml supports ({SCHEMA_VERSION}); upgrade greenml"
        )


@contextmanager
def store_errors(display_url: str, action: str) -> Iterator[None]:
    """Turn database and filesystem errors into one-line StoreErrors naming the URL.

    Args:
        display_url: The store's URL, password masked.
        action: What was being done (``"open"``, ``"add samples to"`` ...).
    """
    try:
        yield
    except StoreError:
        raise
    except (SQLAlchemyError, OSError) as exc:
        raise StoreError(f"cannot {action} run store {display_url}: {describe_error(exc)}") from exc
    except Exception as exc:
        # DB-API errors raised outside SQLAlchemy's wrapping (e.g. in a connect hook).
        if type(exc).__module__.split(".")[0] not in ("sqlite3", "psycopg"):
            raise
        raise StoreError(f"cannot {action} run store {display_url}: {describe_error(exc)}") from exc


def describe_error(exc: BaseException) -> str:
    """One line naming the cause of a database error, without SQL or driver noise."""
    cause: BaseException = exc
    if isinstance(exc, DBAPIError) and exc.orig is not None:
        cause = exc.orig
    message = " ".join(str(cause).split()) or type(cause).__name__
    if isinstance(exc, IntegrityError):
        message = f"integrity error: {message}"
    if isinstance(cause, OSError) and cause.strerror:
        message = f"{cause.strerror}: {cause.filename}" if cause.filename else cause.strerror
    return message

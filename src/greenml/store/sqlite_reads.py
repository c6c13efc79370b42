"""Reads of a SQLite run store through the standard library, without SQLAlchemy.

``greenml runs list`` and ``greenml runs show`` are commands people type and
wait for; importing SQLAlchemy costs them more than the read itself (~0.2 s).
On a SQLite store whose schema is this greenml's, these reads go through
:mod:`sqlite3` and the same pure record functions as :class:`~greenml.store.repository.Store`
(:mod:`greenml.store.record`), so a run reads back the same either way. Anything
else (PostgreSQL, another schema version, a missing file, a tag filter, an
unfinished run whose energy is integrated from its samples) answers ``None``
and the caller uses the full store.
"""

from __future__ import annotations

import socket
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from greenml.errors import RunNotFound, StoreError
from greenml.store import record as rec
from greenml.store.schema_version import SCHEMA_VERSION

if TYPE_CHECKING:
    from greenml.record.run_record import RunRecord

AMBIGUOUS_SHOWN = 10
"""At most this many ids are named when a prefix matches several runs (as the Store does)."""
_BUSY_TIMEOUT_S = 5.0


class SqliteReader:
    """Read-only access to one SQLite store file of the current schema version."""

    def __init__(self, connection: sqlite3.Connection, url: str) -> None:
        self.url = url
        self._conn = connection
        self._hostname = socket.gethostname()

    def list_runs(self, limit: int = 20, name: str | None = None) -> list[dict[str, Any]] | None:
        """The Store's :meth:`~greenml.store.repository.Store.list_runs` without a tag filter;
        ``None`` when a listed run is unfinished (its energy comes from its samples)."""
        query = "SELECT * FROM runs"
        params: list[Any] = []
        if name is not None:
            query += " WHERE name = ?"
            params.append(name)
        query += " ORDER BY started_at DESC, id"
        if limit > 0:
            query += " LIMIT ?"
            params.append(limit)
        now = time.time()
        out = [rec.summary(row, now=now, hostname=self._hostname)
               for row in self._rows(query, params)]  # fmt: skip
        if any(s["total_kwh"] is None and s["status"] in ("running", "incomplete") for s in out):
            return None
        return out

    def get_record_dict(self, id_or_prefix: str) -> dict[str, Any] | None:
        """The run record (JSON-ready) of the run ``id_or_prefix`` names, as the Store builds it;
        ``None`` when no energy was stored (the Store integrates its samples).

        Raises:
            RunNotFound: No run matches.
            StoreError: Several runs match.
        """
        run_id = self._resolve(id_or_prefix)
        rows = self._rows("SELECT * FROM runs WHERE id = ?", [run_id])
        if not rows:
            raise RunNotFound(f"no run with id {run_id!r}")
        if rows[0]["energy"] is None:
            return None
        windows = self._rows("SELECT * FROM windows WHERE run_id = ? ORDER BY id", [run_id])
        return rec.build_record(rows[0], windows, None, now=time.time(), hostname=self._hostname)

    def has_unfinished(self) -> bool:
        """Whether a run has no stored energy yet (its record needs its samples: the Store)."""
        return bool(self._rows("SELECT 1 AS x FROM runs WHERE energy IS NULL LIMIT 1", []))

    def records_containing(
        self, fragment: str, project_id: int | None = None
    ) -> list[RunRecord]:
        """The Store's :meth:`~greenml.store.repository.Store.records_containing`, for a store
        without unfinished runs (see :meth:`has_unfinished`); oldest first.

        Raises:
            StoreError: A matching run has no stored energy (ask the Store).
        """
        from greenml.record.run_record import RunRecord

        escaped = fragment.replace("/", "//").replace("%", "/%").replace("_", "/_")
        query = "SELECT * FROM runs WHERE extra LIKE '%' || ? || '%' ESCAPE '/'"
        params: list[Any] = [escaped]
        if project_id is not None:
            query += " AND project_id = ?"
            params.append(project_id)
        rows = self._rows(query + " ORDER BY started_at, id", params)
        now, out = time.time(), []
        for row in rows:
            if row["energy"] is None:
                raise StoreError(f"run {row['id']} is unfinished: read it through the Store")
            windows = self._rows("SELECT * FROM windows WHERE run_id = ? ORDER BY id", [row["id"]])
            record = rec.build_record(row, windows, None, now=now, hostname=self._hostname)
            out.append(RunRecord.from_dict(record))
        return out

    def _resolve(self, id_or_prefix: str) -> str:
        prefix = id_or_prefix.strip().lower()
        if not prefix:
            raise RunNotFound("no run matches '' (empty run id)")
        found = [str(r["id"]) for r in self._rows(
            "SELECT id FROM runs WHERE substr(id, 1, ?) = ? ORDER BY started_at DESC LIMIT ?",
            [len(prefix), prefix, AMBIGUOUS_SHOWN + 1])]  # fmt: skip
        if not found:
            raise RunNotFound(f"no run matches {id_or_prefix!r}")
        if len(found) > 1:
            shown = ", ".join(found[:AMBIGUOUS_SHOWN])
            more = " ..." if len(found) > AMBIGUOUS_SHOWN else ""
            raise StoreError(f"run id {id_or_prefix!r} is ambiguous: {shown}{more}")
        return found[0]

    def _rows(self, query: str, params: list[Any]) -> list[dict[str, Any]]:
        try:
            cursor = self._conn.execute(query, params)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the run store {self.url}: {exc}") from exc
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def __enter__(self) -> SqliteReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_sqlite_reader(path: Path, url: str) -> SqliteReader | None:
    """A reader of the store file at ``path`` when it is SQLite of this schema version, else
    ``None`` (the caller opens the full store, which migrates, refuses or explains)."""
    if not path.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                               timeout=_BUSY_TIMEOUT_S)  # fmt: skip
    except sqlite3.Error:
        return None
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.Error:
        row = None
    if row is None or str(row[0]) != str(SCHEMA_VERSION):
        conn.close()
        return None
    return SqliteReader(conn, url)

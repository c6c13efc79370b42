"""The run store: runs, their windows and samples, on SQLite or PostgreSQL.

Reading a run's samples back (rows, packed blocks, numpy columns) is
:mod:`greenml.store.sample_reads`.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from sqlalchemy import Connection, Engine, select, update

from greenml.errors import ConfigError, RunNotFound, StoreError
from greenml.measure.measurement import Measurement, Sample
from greenml.record.run_record import RECORD_SCHEMA_VERSION, RunRecord
from greenml.store import record as rec
from greenml.store import sample_reads
from greenml.store.blocks import pack_blocks
from greenml.store.engine import WRITE_OPTION, init_schema, make_engine, store_errors
from greenml.store.ids import new_run_id
from greenml.store.rows import (
    dumps,
    sample_row,
    tag_rows,
    window_dict,
    window_row,
)
from greenml.store.schema import (
    FINAL_STATUSES,
    advisor_state,
    run_tags,
    runs,
    sample_blocks,
    samples,
    windows,
)
from greenml.store.url import mask_url, resolve_url
from greenml.store.values import check_devices, check_run_texts, check_window_names


def tag_filter(key: str, value: str) -> Any:
    """A WHERE clause: the run carries tag ``key`` = ``value`` (an indexed lookup)."""
    return runs.c.id.in_(
        select(run_tags.c.run_id).where(run_tags.c.key == key, run_tags.c.value == value)
    )


_AMBIGUOUS_SHOWN = 10


def _now() -> float:
    return time.time()


class Store:
    """Runs, windows and samples in one database.

    Args:
        url: Database URL or path; ``None`` for ``GREENML_DB`` or the default file.

    Raises:
        ConfigError: The URL is not understood.
        StoreError: The database cannot be opened (unwritable, corrupt, refused,
            or written by a newer greenml).
    """

    def __init__(self, url: str | None = None) -> None:
        self._url = resolve_url(url)
        self.url = mask_url(self._url)
        self._hostname = socket.gethostname()
        self._engine: Engine | None = None
        engine: Engine | None = None
        try:
            with store_errors(self.url, "open"):
                engine = make_engine(self._url)
                init_schema(engine, self.url)
        except StoreError:
            if engine is not None:
                engine.dispose()
            raise
        self._engine = engine

    # -- plumbing -----------------------------------------------------------------

    @contextmanager
    def _write(self, action: str) -> Iterator[Connection]:
        with store_errors(self.url, action), self._live_engine().connect() as conn:
            conn.execution_options(**{WRITE_OPTION: True})
            with conn.begin():
                yield conn

    @contextmanager
    def _read(self, action: str) -> Iterator[Connection]:
        with store_errors(self.url, action), self._live_engine().connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def writing(self, action: str) -> Iterator[Connection]:
        """A connection in one write transaction (SQLite: ``BEGIN IMMEDIATE``); errors are
        StoreErrors saying ``cannot <action> run store URL``."""
        with self._write(action) as conn:
            yield conn

    @contextmanager
    def reading(self, action: str) -> Iterator[Connection]:
        """A connection in one read transaction (for queries beyond this class's)."""
        with self._read(action) as conn:
            yield conn

    def _live_engine(self) -> Engine:
        if self._engine is None:
            raise StoreError(f"run store {self.url} is closed")
        return self._engine

    @staticmethod
    def _require(rowcount: int, run_id: str) -> None:
        if rowcount == 0:
            raise RunNotFound(f"no run with id {run_id!r}")

    # -- writing --------------------------------------------------------------------

    def create_run(
        self,
        *,
        name: str | None,
        command: list[str],
        tags: dict[str, str],
        started_at: float,
        pid: int,
        hostname: str | None,
        run_id: str | None = None,
    ) -> str:
        """Insert a ``running`` run and return its id (12 hex characters, or ``run_id``)."""
        check_run_texts(name, tags, hostname)  # refused here, alike on every backend
        run_id = run_id or new_run_id()
        with self._write("create a run in") as conn:
            conn.execute(
                runs.insert().values(
                    id=run_id,
                    name=name,
                    command=dumps(list(command)),
                    tags=dumps(dict(tags)),
                    status="running",
                    started_at=float(started_at),
                    heartbeat_at=_now(),
                    pid=int(pid),
                    hostname=hostname,
                    extra=dumps({"schema_version": RECORD_SCHEMA_VERSION}),
                )
            )
            if tags:
                conn.execute(run_tags.insert(), tag_rows(run_id, tags))
        return run_id

    def heartbeat(self, run_id: str) -> None:
        """Mark a running run as alive now."""
        with self._write("write a heartbeat to") as conn:
            result = conn.execute(
                update(runs).where(runs.c.id == run_id).values(heartbeat_at=_now())
            )
            self._require(result.rowcount, run_id)

    def add_samples(self, run_id: str, items: Sequence[Sample]) -> None:
        """Insert samples in one transaction; known metrics get columns, others ``extra``."""
        if not items:
            return
        check_devices({(s.device, s.component) for s in items})
        rows = [sample_row(run_id, s) for s in items]
        with self._write("add samples to") as conn:
            conn.execute(samples.insert(), rows)
            conn.execute(sample_blocks.insert(), pack_blocks(run_id, items))

    def add_window(self, run_id: str, measurement: Measurement) -> None:
        """Store one finished window."""
        self.add_windows(run_id, [measurement])

    def add_windows(self, run_id: str, measurements: Sequence[Measurement]) -> None:
        """Store several finished windows in one transaction."""
        if not measurements:
            return
        rows = [window_row(run_id, m) for m in measurements]
        check_window_names(r["name"] for r in rows)
        with self._write("add windows to") as conn:
            conn.execute(windows.insert(), rows)

    def set_environment(self, run_id: str, env: dict[str, Any]) -> None:
        """Replace the run's environment block (hardware, software, location ...)."""
        with self._write("set the environment in") as conn:
            result = conn.execute(
                update(runs).where(runs.c.id == run_id).values(environment=dumps(env))
            )
            self._require(result.rowcount, run_id)

    def update_extra(self, run_id: str, patch: dict[str, Any]) -> None:
        """Shallow-merge ``patch`` into the run's extra keys (``carbon``, ``cost`` ...).

        Raises:
            ConfigError: A key would shadow a core record key.
        """
        reserved = sorted(rec.CORE_KEYS.intersection(patch))
        if reserved:
            raise ConfigError(f"extra keys {reserved} are reserved run record keys")
        with self._write("update") as conn:
            current = conn.execute(
                select(runs.c.extra).where(runs.c.id == run_id).with_for_update()
            ).scalar_one_or_none()
            if current is None:
                raise RunNotFound(f"no run with id {run_id!r}")
            extra = rec.loads(current, {}, f"extra of run {run_id}")
            extra.update(patch)
            conn.execute(update(runs).where(runs.c.id == run_id).values(extra=dumps(extra)))

    def get_state(self, namespace: str, key: str) -> dict[str, Any] | None:
        """The JSON document an advisor stored under (namespace, key), or None."""
        with self._read("read advisor state from") as conn:
            raw = conn.execute(
                select(advisor_state.c.value).where(
                    advisor_state.c.namespace == namespace, advisor_state.c.key == key
                )
            ).scalar_one_or_none()
        if raw is None:
            return None
        value: dict[str, Any] = rec.loads(raw, {}, f"advisor state {namespace}/{key}")
        return value

    def put_state(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        """Store (replace) an advisor's JSON document under (namespace, key)."""
        where = (advisor_state.c.namespace == namespace, advisor_state.c.key == key)
        with self._write("store advisor state in") as conn:
            found = conn.execute(
                select(advisor_state.c.key).where(*where).with_for_update()
            ).scalar_one_or_none()
            values = {"value": dumps(value), "updated_at": _now()}
            if found is None:
                conn.execute(advisor_state.insert().values(namespace=namespace, key=key, **values))
            else:
                conn.execute(update(advisor_state).where(*where).values(**values))

    def finish_run(
        self,
        run_id: str,
        *,
        status: str,
        exit_code: int | None,
        duration_s: float,
        energy: dict[str, Any],
        ended_at: float,
    ) -> None:
        """Record the end of a run: final status, exit code, duration, energy block.

        Raises:
            ConfigError: ``status`` is not ``completed``, ``failed`` or ``incomplete``.
        """
        if status not in FINAL_STATUSES:
            raise ConfigError(f"run status must be one of {FINAL_STATUSES}, not {status!r}")
        with self._write("finish a run in") as conn:
            result = conn.execute(
                update(runs)
                .where(runs.c.id == run_id)
                .values(
                    status=status,
                    exit_code=exit_code,
                    duration_s=float(duration_s),
                    energy=dumps(energy),
                    ended_at=float(ended_at),
                    heartbeat_at=_now(),
                )
            )
            self._require(result.rowcount, run_id)

    # -- reading ----------------------------------------------------------------------

    def resolve_id(self, id_or_prefix: str) -> str:
        """The full id of the one run whose id starts with ``id_or_prefix``.

        Raises:
            RunNotFound: No run matches.
            StoreError: Several runs match (the message lists them).
        """
        with self._read("read") as conn:
            return self._resolve(conn, id_or_prefix)

    def _resolve(self, conn: Connection, id_or_prefix: str) -> str:
        prefix = id_or_prefix.strip().lower()
        if not prefix:
            raise RunNotFound("no run matches '' (empty run id)")
        found = list(
            conn.execute(
                select(runs.c.id)
                .where(runs.c.id.startswith(prefix, autoescape=True))
                .order_by(runs.c.started_at.desc())
                .limit(_AMBIGUOUS_SHOWN + 1)
            ).scalars()
        )
        if not found:
            raise RunNotFound(f"no run matches {id_or_prefix!r}")
        if len(found) > 1:
            shown = ", ".join(found[:_AMBIGUOUS_SHOWN])
            more = " ..." if len(found) > _AMBIGUOUS_SHOWN else ""
            raise StoreError(f"run id {id_or_prefix!r} is ambiguous: {shown}{more}")
        return str(found[0])

    def get_record(self, id_or_prefix: str, *, exact: bool = False) -> dict[str, Any]:
        """The run record (JSON-ready) of the run whose id is or starts with ``id_or_prefix``.

        The dict of :meth:`get_run_record`, exactly as the run was stored.

        Raises:
            RunNotFound: No run matches.
            StoreError: Several runs match, or the database cannot be read.
        """
        return self.get_run_record(id_or_prefix, exact=exact).to_dict()

    def get_run_record(self, id_or_prefix: str, *, exact: bool = False) -> RunRecord:
        """The typed run record of the run whose id is or starts with ``id_or_prefix``
        (with ``exact``: whose id is ``id_or_prefix``, as a server reads an id it was given).

        Raises:
            RunNotFound: No run matches.
            StoreError: Several runs match, or the database cannot be read.
        """
        with self._read("read") as conn:
            run_id = id_or_prefix if exact else self._resolve(conn, id_or_prefix)
            row = conn.execute(select(runs).where(runs.c.id == run_id)).mappings().first()
            if row is None:
                raise RunNotFound(f"no run with id {run_id!r}")
            window_rows = self._window_rows(conn, run_id)
            sample_rows = sample_reads.sample_rows(conn, run_id) if row["energy"] is None else None
            record = rec.build_record(
                row, window_rows, sample_rows, now=_now(), hostname=self._hostname
            )
        return RunRecord.from_dict(record)

    def records_containing(
        self, fragment: str, project_id: int | None = None
    ) -> list[RunRecord]:
        """The records whose stored extra blocks contain the text ``fragment``, oldest first.

        A coarse filter for the modules that look a block up (:mod:`greenml.store.jobs`):
        they check the block itself on what comes back. Three queries however many runs
        match (runs, their windows, the samples of unfinished ones). ``project_id``: only
        the runs uploaded to that team-server project (None: every run).
        """
        query = select(runs).where(runs.c.extra.contains(fragment, autoescape=True))
        if project_id is not None:
            query = query.where(runs.c.project_id == project_id)
        query = query.order_by(runs.c.started_at, runs.c.id)
        now = _now()
        with self._read("read runs from") as conn:
            rows = list(conn.execute(query).mappings())
            ids = [row["id"] for row in rows]
            by_run: dict[str, list[Any]] = {run_id: [] for run_id in ids}
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                found = select(windows).where(windows.c.run_id.in_(chunk)).order_by(windows.c.id)
                for w in conn.execute(found).mappings():
                    by_run[w["run_id"]].append(w)
            out = []
            for row in rows:
                sample_rows = (
                    sample_reads.sample_rows(conn, row["id"]) if row["energy"] is None else None
                )
                record = rec.build_record(
                    row, by_run[row["id"]], sample_rows, now=now, hostname=self._hostname
                )
                out.append(RunRecord.from_dict(record))
        return out

    def list_runs(
        self, limit: int = 20, name: str | None = None, tag: dict[str, str] | None = None
    ) -> list[dict[str, Any]]:
        """Summaries of the newest runs first.

        Args:
            limit: At most this many runs; 0 or less for all.
            name: Only runs with exactly this name.
            tag: Only runs carrying all these tag key/value pairs.
        """
        query = select(runs).order_by(runs.c.started_at.desc(), runs.c.id)
        if name is not None:
            query = query.where(runs.c.name == name)
        for key, value in (tag or {}).items():  # the tag index (schema 4), not a scan
            query = query.where(tag_filter(key, value))
        if limit > 0:
            query = query.limit(limit)
        now = _now()
        with self._read("list runs in") as conn:
            out = [
                rec.summary(row, now=now, hostname=self._hostname)
                for row in conn.execute(query).mappings()
            ]
        for summary in out:  # unfinished: the energy integrated from its samples, as `show` says
            if summary["total_kwh"] is None and summary["status"] in ("running", "incomplete"):
                energy = self.get_record(summary["id"]).get("energy") or {}
                summary["total_kwh"] = energy.get("total_kwh")
                summary["partial"] = True
        return out

    def samples(self, run_id: str) -> list[dict[str, Any]]:
        """The run's samples ordered by time: ``time_s``, ``device``, ``component``,
        ``power_w``, the metric columns, and ``extra`` (other metrics, a dict)."""
        with self._read("read samples from") as conn:
            return sample_reads.sample_dicts(conn, run_id)

    def sample_columns(self, run_id: str) -> dict[str, Any]:
        """The run's samples as numpy columns (see :func:`sample_reads.sample_columns`)."""
        with self._read("read samples from") as conn:
            return sample_reads.sample_columns(conn, run_id)

    def windows(self, run_id: str) -> list[dict[str, Any]]:
        """The run's windows in insertion order, each with its full ``measurement`` dict."""
        with self._read("read windows from") as conn:
            rows = self._window_rows(conn, run_id)
        return [window_dict(r) for r in rows]

    @staticmethod
    def _window_rows(conn: Connection, run_id: str) -> list[Any]:
        query = select(windows).where(windows.c.run_id == run_id).order_by(windows.c.id)
        return list(conn.execute(query).mappings())

    # -- lifecycle ----------------------------------------------------------------------

    def close(self) -> None:
        """Release the database connections; the store cannot be used afterwards."""
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.url!r})"

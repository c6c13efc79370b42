"""Finish a run in one write transaction and give its record from memory, not by reading it back.

:func:`store_finished` writes what is left of a run (its row when it is not there yet,
its samples, windows, environment, extra blocks and final figures) in one transaction,
and builds the run record from the very rows it wrote with the function the reads use
(:func:`greenml.store.record.build_record`), so the record in hand is the record stored.
The run's row is read (once, inside the transaction) only when its writer does not say
what it holds; the samples only when their digest is not known in memory.

:func:`index_digest` covers what the store keeps of a run beside its record (the host
name column and the tag index rows); the record carries it as ``index_sha256``, so that
the ledger's check covers them too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import select, update

from greenml.errors import ConfigError, RunNotFound
from greenml.measure.measurement import Measurement, Sample
from greenml.record.run_record import RECORD_SCHEMA_VERSION
from greenml.store import record as rec
from greenml.store.blocks import pack_blocks
from greenml.store.rows import dumps, sample_row, tag_rows, window_dict, window_row
from greenml.store.schema import FINAL_STATUSES, run_tags, runs, sample_blocks, samples, windows

if TYPE_CHECKING:
    from greenml.store.repository import Store

INDEX_FIELD = "index_sha256"
"""The record field that holds :func:`index_digest` of the run as it was stored."""


def index_digest(hostname: str | None, tags: Iterable[tuple[str, str]]) -> str:
    """SHA-256 (hex) of a run's ``runs.hostname`` and its tag index rows (key, value)."""
    pairs = sorted([str(k), str(v)] for k, v in tags)
    text = json.dumps({"hostname": hostname, "tags": pairs}, ensure_ascii=False,
                      sort_keys=True, separators=(",", ":"))  # fmt: skip
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def stored_index(store: Store, run_id: str) -> tuple[str | None, dict[str, str]]:
    """The run's ``runs.hostname`` and tag index as the store holds them now.

    Raises:
        RunNotFound: No such run.
    """
    with store.reading("read the tag index from") as conn:
        found = conn.execute(select(runs.c.hostname).where(runs.c.id == run_id)).first()
        if found is None:
            raise RunNotFound(f"no run with id {run_id!r}")
        rows = conn.execute(
            select(run_tags.c.key, run_tags.c.value).where(run_tags.c.run_id == run_id)
        ).all()
    return found[0], {str(k): str(v) for k, v in rows}


@dataclass(frozen=True)
class RunEnd:
    """What finishing a run writes.

    Attributes:
        start: The row values of the run's start (``name``, ``command``, ``tags``,
            ``started_at``, ``pid``, ``hostname``): inserted when the run is not stored yet.
        known_extra: The run's stored extra blocks as its own writer wrote them at the start
            (``None``: not known here, the row is read once in the transaction).
        extra: Blocks merged into the stored ones.
        samples_sha256: The digest of the whole timeline once these samples are added,
            or how to compute it from the stored samples (read once in the transaction).
        fresh_sha256: The digest when the run is not stored yet (its samples are all here).
    """

    run_id: str
    start: Mapping[str, Any]
    known_extra: Mapping[str, Any] | None
    extra: Mapping[str, Any]
    environment: Mapping[str, Any]
    samples: Sequence[Sample]
    windows: Sequence[Measurement]
    status: str
    exit_code: int | None
    duration_s: float
    energy: Mapping[str, Any]
    ended_at: float
    samples_sha256: str | Callable[[list[dict[str, Any]]], str]
    samples_field: str = "samples_sha256"
    fresh_sha256: str | None = None


@dataclass(frozen=True)
class Finished:
    """The record as stored, and the windows as :meth:`Store.windows` reads them."""

    record: dict[str, Any]
    windows: list[dict[str, Any]]
    fresh: bool  # the run was not in the store before: its samples are all this call's


def store_finished(store: Store, end: RunEnd, *, now: float) -> Finished:
    """Write the end of a run in one transaction; its record, built from what was written.

    Raises:
        ConfigError: ``status`` is not a final status, or an extra key shadows a core key.
        StoreError: The database failed (nothing of this call is kept).
    """
    if end.status not in FINAL_STATUSES:
        raise ConfigError(f"run status must be one of {FINAL_STATUSES}, not {end.status!r}")
    reserved = sorted(rec.CORE_KEYS.intersection(end.extra))
    if reserved:
        raise ConfigError(f"extra keys {reserved} are reserved run record keys")
    run_id, start = end.run_id, end.start
    window_rows = [window_row(run_id, m) for m in end.windows]
    with store.writing("finish a run in") as conn:
        fresh = False
        if end.known_extra is not None:  # its writer says what the row holds: no read
            row = {**_start_row(run_id, start, now), "extra": dumps(dict(end.known_extra))}
        else:  # the one read: whose row is it, and what does it hold
            found = conn.execute(
                select(runs).where(runs.c.id == run_id).with_for_update()
            ).mappings().first()
            if found is not None:
                row = dict(found)
            else:
                row, fresh = _start_row(run_id, start, now), True
                conn.execute(runs.insert().values(**row))
                if start["tags"]:
                    conn.execute(run_tags.insert(), tag_rows(run_id, dict(start["tags"])))
        if end.samples:
            conn.execute(samples.insert(), [sample_row(run_id, s) for s in end.samples])
            conn.execute(sample_blocks.insert(), pack_blocks(run_id, end.samples))
        if window_rows:
            conn.execute(windows.insert(), window_rows)
        digest = end.fresh_sha256 if fresh and end.fresh_sha256 else end.samples_sha256
        if not isinstance(digest, str):  # not known in memory: the stored timeline, once
            from greenml.store.sample_reads import sample_dicts

            digest = digest(sample_dicts(conn, run_id))
        tags = rec.loads(row["tags"], {}, f"tags of run {run_id}")
        extra = {**rec.loads(row["extra"], {}, f"extra of run {run_id}"), **end.extra,
                 end.samples_field: digest,
                 INDEX_FIELD: index_digest(row["hostname"], tags.items())}  # fmt: skip
        final = {
            "status": end.status, "exit_code": end.exit_code,
            "duration_s": float(end.duration_s), "energy": dumps(dict(end.energy)),
            "ended_at": float(end.ended_at), "heartbeat_at": now,
            "environment": dumps(dict(end.environment)), "extra": dumps(extra),
        }  # fmt: skip
        result = conn.execute(update(runs).where(runs.c.id == run_id).values(**final))
        if result.rowcount == 0:
            raise RunNotFound(f"no run with id {run_id!r}")
        row.update(final)
    # greenml's writers keep every window of a run until its end: these are all of them
    record = rec.build_record(row, window_rows, None, now=now, hostname="")
    return Finished(record, [window_dict(w) for w in window_rows], fresh)


def _start_row(run_id: str, start: Mapping[str, Any], now: float) -> dict[str, Any]:
    return {
        "id": run_id, "name": start["name"], "command": dumps(list(start["command"])),
        "tags": dumps(dict(start["tags"])), "status": "running",
        "started_at": float(start["started_at"]), "ended_at": None, "heartbeat_at": now,
        "duration_s": None, "exit_code": None, "pid": int(start["pid"]),
        "hostname": start["hostname"], "energy": None, "environment": None,
        "extra": dumps({"schema_version": RECORD_SCHEMA_VERSION}),
    }  # fmt: skip


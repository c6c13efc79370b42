"""Store a finished run: the one sequence behind the recorder and the spool.

:class:`FinishedRun` is everything known of a run once its command has ended.
The recorder hands it to :func:`persist_run` in-process, or writes it to the
spool as JSON (:meth:`FinishedRun.to_dict`) for a detached writer or the next
reader to store with the same function (:meth:`FinishedRun.from_dict`).

Its blocks stay JSON (they are typed once stored, as the record's
:class:`~greenml.record.run_record.EnergyBlock` ...): a command that ends before
the store is open hands its run to the spool without importing the record types.

Lazy imports: the ledger hook, the upload and the environment capture, only where a run
is stored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from greenml.errors import StoreError
from greenml.measure.measurement import Measurement, Sample

if TYPE_CHECKING:
    from greenml.ledger.entry import Entry
    from greenml.ledger.samples import TimelineDigest
    from greenml.record.run_record import RunRecord
    from greenml.store.repository import Store

SPOOL_FORMAT = 1
"""Version of the JSON layout of :meth:`FinishedRun.to_dict` (the spool file)."""


@dataclass(frozen=True)
class FinishedRun:
    """A run whose command has ended, ready to be stored.

    Attributes:
        energy: The final energy block (the run window's, with the Meter's notes).
        window: The run window itself; ``windows``: those the program published.
        samples: Samples not stored yet (a recorder flushes the others as it goes).
        measured_devices: How each device is measured (kept with the run).
        extra: More record blocks (``carbon``, ``cost``, ``progress``, ``schedule`` ...).
        environment: ``None``: captured where the run is stored (with
            ``include_hostname`` and the git state of ``cwd``).
    """

    run_id: str
    name: str | None
    command: list[str]
    tags: dict[str, str]
    started_at: float
    pid: int
    hostname: str | None
    status: str
    exit_code: int | None
    duration_s: float
    ended_at: float
    energy: dict[str, Any]
    window: Measurement
    windows: list[Measurement] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    measured_devices: dict[str, dict[str, Any]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] | None = None
    include_hostname: bool = True
    cwd: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON the spool keeps (the layout of spool format 1)."""
        return {
            "version": SPOOL_FORMAT,
            "run": {"run_id": self.run_id, "name": self.name, "command": self.command,
                    "tags": self.tags, "started_at": self.started_at, "pid": self.pid,
                    "hostname": self.hostname},
            "include_hostname": self.include_hostname,
            "cwd": self.cwd,
            "environment": self.environment,
            "measured_devices": self.measured_devices,
            "samples": [list(asdict(s).values()) for s in self.samples],
            "window": self.window.to_window_dict(),
            "windows": [w.to_window_dict() for w in self.windows],
            "finish": {"status": self.status, "exit_code": self.exit_code,
                       "duration_s": self.duration_s, "ended_at": self.ended_at,
                       "energy": self.energy},
            "extra": self.extra,
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FinishedRun:
        """Read :meth:`to_dict`'s JSON back.

        Raises:
            KeyError: A key every spool file has is missing.
            StoreError: The file was written by a newer greenml (a later format).
        """
        if int(data.get("version", SPOOL_FORMAT)) > SPOOL_FORMAT:
            raise StoreError(f"spool format {data['version']} is newer than this greenml's")
        run, finish = data["run"], data["finish"]
        return cls(
            run_id=str(run["run_id"]), name=run["name"], command=list(run["command"]),
            tags=dict(run["tags"]), started_at=float(run["started_at"]), pid=int(run["pid"]),
            hostname=run["hostname"], status=str(finish["status"]),
            exit_code=finish["exit_code"], duration_s=float(finish["duration_s"]),
            ended_at=float(finish["ended_at"]), energy=dict(finish["energy"]),
            window=Measurement.from_window_dict(data["window"]),
            windows=[Measurement.from_window_dict(w) for w in data.get("windows", [])],
            samples=[Sample(*s) for s in data.get("samples", [])],
            measured_devices=dict(data.get("measured_devices") or {}),
            extra=dict(data.get("extra") or {}), environment=data.get("environment"),
            include_hostname=bool(data.get("include_hostname", True)), cwd=data.get("cwd"),
        )  # fmt: skip


@dataclass(frozen=True)
class StoredSoFar:
    """What a run's own writer (the recorder) already stored of it while it ran.

    Attributes:
        extra: The extra blocks it wrote at the start (the stored ``extra`` column).
        timeline: The digest of the samples it flushed, in the order stored.
        samples: Those samples, kept when a team server waits for them (``None``: not kept).
    """

    extra: dict[str, Any]
    timeline: TimelineDigest
    samples: list[Sample] | None = None


@dataclass(frozen=True)
class StoredRun:
    """A run just stored and ledgered, in hand for the sinks after the store.

    Attributes:
        record: The record as stored (built from the rows written, never read back).
        windows: Its windows as :meth:`Store.windows` gives them.
        samples: Every sample of the run in memory (``None``: some are only in the store).
        entry: Its ledger entry (``None``: not ledgered).
    """

    record: RunRecord
    windows: list[dict[str, Any]]
    samples: list[Sample] | None
    entry: Entry | None


def persist_run(
    store: Store, finished: FinishedRun, so_far: StoredSoFar | None = None
) -> RunRecord | None:
    """Store a finished run, append its record to the ledger, and send it to the team
    server when one is configured: the store's sinks, in order (:func:`store_run`, then
    :func:`greenml.run.upload.upload_stored`), the record handed from one to the next.

    The run may exist already (a recorder creates it at the start, and stores
    its samples as it goes: ``so_far`` says what it wrote). Neither the ledger nor
    the server ever fails the run: a failure warns, and a run the server did not
    take waits for the next try.

    Returns:
        The record as stored and ledgered.

    Raises:
        GreenmlError: The store failed before the run was finished in it.
    """
    from greenml.run.upload import upload_stored

    stored = store_run(store, finished, so_far)
    upload_stored(store, stored)
    return stored.record


def store_run(store: Store, f: FinishedRun, so_far: StoredSoFar | None = None) -> StoredRun:
    """The store and ledger sink: the run's end written in one transaction, its record
    built from the rows written (no read-back), hashed and ledgered from memory.

    Raises:
        GreenmlError: The store failed (nothing of the run's end is kept).
    """
    import time

    from greenml.ledger.hook import append_run
    from greenml.record.run_record import RunRecord
    from greenml.store.finishing import RunEnd, store_finished

    env = f.environment
    if not env:
        from greenml.run.environment import capture_environment

        env = capture_environment(include_hostname=f.include_hostname, cwd=f.cwd)
    from greenml.ledger.samples import FIELD as samples_field  # hashlib: where it is stored

    end = RunEnd(
        run_id=f.run_id,
        start={"name": f.name, "command": f.command, "tags": f.tags,
               "started_at": f.started_at, "pid": f.pid, "hostname": f.hostname},
        known_extra=None if so_far is None else so_far.extra,
        extra={"measured_devices": f.measured_devices, **f.extra}, environment=env,
        samples=f.samples, windows=[f.window, *f.windows], status=f.status,
        exit_code=f.exit_code, duration_s=f.duration_s, energy=f.energy, ended_at=f.ended_at,
        samples_sha256=_timeline_digest(f.samples, so_far), samples_field=samples_field,
        fresh_sha256=_fresh_digest(f.samples),
    )  # fmt: skip
    done = store_finished(store, end, now=time.time())
    record = RunRecord.from_dict(done.record)
    entry = append_run(store.url, record, store)
    if so_far is None:
        every = list(f.samples) if done.fresh else None
    else:
        every = None if so_far.samples is None else [*so_far.samples, *f.samples]
    return StoredRun(record, done.windows, every, entry)


def _fresh_digest(samples: list[Sample]) -> str:
    """The digest of a run stored at once: its samples in the store's order (by time,
    then as inserted), all in memory."""
    from greenml.ledger.samples import samples_digest
    from greenml.store.rows import sample_dict, sample_row

    ordered = sorted(samples, key=lambda s: s.time_s)  # stable: ties stay as inserted
    return samples_digest(sample_dict(sample_row("", s)) for s in ordered)


def _timeline_digest(
    samples: list[Sample], so_far: StoredSoFar | None
) -> str | Callable[[list[dict[str, Any]]], str]:
    """The digest of the run's whole stored timeline, from memory when it can be known there;
    else how to digest the samples as stored (read once)."""
    from greenml.ledger.samples import samples_digest
    from greenml.store.rows import sample_dict, sample_row

    if so_far is None:
        # samples already stored by another writer (a store that failed mid-run) are unknown
        return samples_digest
    digest = so_far.timeline.copy().add(sample_dict(sample_row("", s)) for s in samples)
    return digest.hexdigest() if digest.exact else samples_digest

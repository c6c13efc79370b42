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

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from greenml.errors import RunNotFound, StoreError
from greenml.ledger.samples import FIELD as SAMPLES_FIELD
from greenml.ledger.samples import samples_digest
from greenml.measure.measurement import Measurement, Sample

if TYPE_CHECKING:
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


def persist_run(store: Store, finished: FinishedRun) -> RunRecord | None:
    """Store a finished run, append its record to the ledger, and send it to the team
    server when one is configured (:mod:`greenml.run.upload`).

    The run may exist already (a recorder creates it at the start, and stores
    its samples as it goes). Neither the ledger nor the server ever fails the
    run: a failure warns, and a run the server did not take waits for the next try.

    Returns:
        The record as stored and ledgered; ``None`` when it could not be read
        back (the run is stored all the same; a warning said why).

    Raises:
        GreenmlError: The store failed before the run was finished in it.
    """
    write_run(store, finished)
    from greenml.ledger.hook import ledger_stored_run
    from greenml.run.upload import upload_after_persist

    record, entry = ledger_stored_run(store, finished.run_id)
    upload_after_persist(store, finished.run_id, entry)
    return record


def write_run(store: Store, f: FinishedRun) -> None:
    """Every write of :func:`persist_run`, in order; the last one marks the run finished."""
    if not _exists(store, f.run_id):
        store.create_run(
            name=f.name, command=f.command, tags=f.tags, started_at=f.started_at, pid=f.pid,
            hostname=f.hostname, run_id=f.run_id,
        )  # fmt: skip
    store.update_extra(f.run_id, {"measured_devices": f.measured_devices, **f.extra})
    env = f.environment
    if not env:
        from greenml.run.environment import capture_environment

        env = capture_environment(include_hostname=f.include_hostname, cwd=f.cwd)
    store.set_environment(f.run_id, env)
    store.add_samples(f.run_id, f.samples)
    store.add_windows(f.run_id, [f.window, *f.windows])
    # the timeline as stored, digested into the record that the ledger hashes
    store.update_extra(f.run_id, {SAMPLES_FIELD: samples_digest(store.samples(f.run_id))})
    store.finish_run(
        f.run_id, status=f.status, exit_code=f.exit_code, duration_s=f.duration_s,
        energy=f.energy, ended_at=f.ended_at,
    )  # fmt: skip


def _exists(store: Store, run_id: str) -> bool:
    try:
        return store.resolve_id(run_id) == run_id
    except RunNotFound:
        return False

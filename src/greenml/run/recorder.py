"""Write a measured run to the store from a background thread.

Opening the store (SQLAlchemy is slow to import) and capturing the environment
happen while the measured command already runs. Samples are flushed every
``flush_s`` seconds (at most 5 s), so a run killed with SIGKILL keeps its data
up to the last flush and reads back as ``incomplete``.

A command that ends before the store is open is not kept waiting: its run is
handed to the spool (:mod:`greenml.run.spool`) and stored by a detached
process. A store that fails does not lose the run either: it is spooled too.

Lazy imports: the environment capture, the store, the persist path and the spool are
imported when first used, so that ``greenml run`` starts the command without paying for
the record types (~50 ms) or SQLAlchemy (~0.3 s).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from greenml.errors import GreenmlError
from greenml.measure.measurement import Measurement, Sample
from greenml.measure.meter import Meter
from greenml.store import new_run_id

if TYPE_CHECKING:
    from greenml.record.run_record import RunRecord
    from greenml.run.persist import FinishedRun, StoredSoFar


@dataclass(frozen=True)
class RunStart:
    """What is known of a run when it starts."""

    name: str | None
    command: list[str]
    tags: dict[str, str]
    started_at: float
    pid: int
    hostname: str | None
    db_url: str | None = None
    include_hostname: bool = True
    cwd: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Recorder:
    """Owns the store connection of one run; every store error is kept, never raised."""

    def __init__(
        self, start: RunStart, meter: Meter, flush_s: float = 2.0, quiet_start_s: float = 0.25
    ) -> None:
        self.start = start
        self.run_id = new_run_id()
        self.error: GreenmlError | None = None
        self.spooled: Path | None = None
        self.sent: str | None = None  # what the team-server sink did ("sent to URL" ...)
        self.environment: dict[str, Any] | None = None
        self._meter = meter
        self._flush_s = min(flush_s, 5.0)
        self._stop = threading.Event()
        self._quiet_start_s = quiet_start_s
        self._hurry = threading.Event()  # set by finish: open the store now if still needed
        self._lock = threading.Lock()
        self._created = False
        self._abandoned = False
        self._unsaved: list[Sample] = []
        self._store: Any = None
        self._so_far: StoredSoFar | None = None  # what this recorder stored while the run ran
        self._thread = threading.Thread(target=self._work, name="greenml-recorder", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        # A command that ends within ``quiet_start_s`` goes to the spool untouched: importing
        # SQLAlchemy here would only compete with the run's end for the GIL.
        self._hurry.wait(self._quiet_start_s)
        with self._lock:
            if self._abandoned:
                return
        try:
            from greenml.run.environment import capture_environment
            from greenml.store import open_store

            s = self.start
            store = open_store(s.db_url)
            with self._lock:
                if self._abandoned:  # the command ended first: the spool has the run
                    store.close()
                    return
                self._store = store
                store.create_run(
                    name=s.name, command=s.command, tags=s.tags, started_at=s.started_at,
                    pid=s.pid, hostname=s.hostname, run_id=self.run_id,
                )  # fmt: skip
                self._created = True
            patch = {**s.extra, "measured_devices": self._provenance()}
            store.update_extra(self.run_id, patch)
            self._so_far = _stored_so_far(patch)
            self.environment = capture_environment(include_hostname=s.include_hostname, cwd=s.cwd)
            store.set_environment(self.run_id, self.environment)
            while not self._stop.wait(self._flush_s):
                self._flush()
        except GreenmlError as exc:
            self.error = exc

    @property
    def store_url(self) -> str | None:
        """The store's URL, without its password (``None``: not open)."""
        store = self._store
        return None if store is None else str(store.url)

    def _provenance(self) -> dict[str, dict[str, Any]]:
        """How each device is measured, kept so that a killed run's figures stay labelled."""
        return {
            d.key: {
                "component": d.component, "name": d.name, "method": d.method,
                "uncertainty_rel": d.uncertainty_rel, "note": d.note,
            }
            for d in self._meter.devices
        }  # fmt: skip

    def _flush(self) -> None:
        self._unsaved.extend(self._meter.drain_samples())
        self._store.add_samples(self.run_id, self._unsaved)
        so_far = self._so_far
        if so_far is not None:  # the run's end digests (and sends) them from memory
            from greenml.store.rows import sample_dict, sample_row

            so_far.timeline.add(sample_dict(sample_row(self.run_id, s)) for s in self._unsaved)
            if so_far.samples is not None:
                so_far.samples.extend(self._unsaved)
        self._unsaved = []
        self._store.heartbeat(self.run_id)

    def finish(
        self,
        measurement: Measurement,
        *,
        exit_code: int | None,
        status: str,
        ended_at: float,
        notes: list[str] | None = None,
        wait_for_store: bool = False,
        extra: dict[str, Any] | None = None,
        windows: Sequence[Measurement] = (),
    ) -> RunRecord | None:
        """Store the final figures; return the run record when it was stored here.

        ``notes`` say how figures were obtained when that is not obvious (a
        fallback, a missing sensor); they are kept in the energy block. Unless
        ``wait_for_store``, a store that is not open yet is not waited for: the
        run goes to the spool (``self.spooled``) and ``None`` is returned.
        ``extra`` blocks (``carbon``, ``cost``) are merged into the record;
        ``windows`` (published by the program, see :mod:`greenml.measure.events`) are
        stored after the run window.
        """
        with self._lock:
            hand_off = not self._created and not wait_for_store
            self._abandoned = hand_off
        self._stop.set()
        self._hurry.set()
        if not hand_off:
            self._thread.join()  # the environment is captured by now
        finished = self._finished(
            measurement, exit_code=exit_code, status=status, ended_at=ended_at,
            notes=notes or [], extra=extra or {}, windows=windows,
        )  # fmt: skip
        if not hand_off and self.error is None:
            try:
                return self._finish_here(finished)
            except GreenmlError as exc:
                self.error = exc
        self._spool(finished)
        return None

    def _finished(
        self, measurement: Measurement, *, exit_code: int | None, status: str, ended_at: float,
        notes: list[str], extra: dict[str, Any], windows: Sequence[Measurement],
    ) -> FinishedRun:  # fmt: skip
        """The run as :func:`~greenml.run.persist.persist_run` takes it (samples added later).

        ``ended_at`` is the start plus the monotonic duration, never the wall clock at
        the end: a clock stepped back during the run cannot put the end before the start.
        """
        from greenml.run.persist import FinishedRun

        s = self.start
        ended_at = s.started_at + measurement.duration_s
        return FinishedRun(
            run_id=self.run_id, name=s.name, command=s.command, tags=s.tags,
            started_at=s.started_at, pid=s.pid, hostname=s.hostname, status=status,
            exit_code=exit_code, duration_s=measurement.duration_s, ended_at=ended_at,
            energy={**measurement.to_dict(), "notes": list(notes)},
            window=measurement, windows=list(windows), measured_devices=self._provenance(),
            extra={**s.extra, **extra}, environment=self.environment,
            include_hostname=s.include_hostname, cwd=s.cwd or os.getcwd(),
        )  # fmt: skip

    def _finish_here(self, finished: FinishedRun) -> RunRecord | None:
        """Store the run through the open store; a record that cannot be read back is an error
        kept in ``self.error`` (the run is stored: it is not spooled again)."""
        from greenml.run.persist import store_run
        from greenml.run.upload_later import send_or_hand_off

        try:
            self._flush()  # the samples since the last flush
            stored = store_run(self._store, finished, self._so_far)  # the store + ledger sink
            self.sent = send_or_hand_off(self._store, stored, self.start.db_url)  # team server
            return stored.record
        finally:
            self._store.close()

    def _spool(self, finished: FinishedRun) -> None:
        from dataclasses import replace

        from greenml.run.spool import start_ingester, write_spool
        from greenml.store.url import resolve_url

        samples = [*self._unsaved, *self._meter.drain_samples()]
        payload = {"db_url": resolve_url(self.start.db_url),
                   **replace(finished, samples=samples).to_dict()}  # fmt: skip
        try:
            self.spooled = write_spool(payload)
        except GreenmlError as exc:
            self.error = self.error or exc
            return
        start_ingester(self.spooled, payload["db_url"])


def _stored_so_far(patch: dict[str, Any]) -> StoredSoFar:
    """What the run's row holds once created and patched; its samples are kept in memory
    when a team server will want them at the end."""
    from greenml.ledger.samples import TimelineDigest
    from greenml.record.run_record import RECORD_SCHEMA_VERSION
    from greenml.run.persist import StoredSoFar
    from greenml.run.server_settings import server_settings

    try:
        keep = server_settings() is not None
    except GreenmlError:
        keep = False
    extra = {"schema_version": RECORD_SCHEMA_VERSION, **patch}
    return StoredSoFar(extra, TimelineDigest(), [] if keep else None)

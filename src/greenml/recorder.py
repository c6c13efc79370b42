"""Write a measured run to the store from a background thread.

Opening the store (SQLAlchemy is slow to import) and capturing the environment
happen while the measured command already runs. Samples are flushed every
``flush_s`` seconds (at most 5 s), so a run killed with SIGKILL keeps its data
up to the last flush and reads back as ``incomplete``.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from greenml.errors import GreenmlError
from greenml.measurement import Measurement
from greenml.meter import Meter

log = logging.getLogger("greenml")


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

    def __init__(self, start: RunStart, meter: Meter, flush_s: float = 2.0) -> None:
        self.start = start
        self.run_id: str | None = None
        self.error: GreenmlError | None = None
        self.environment: dict[str, Any] = {}
        self._meter = meter
        self._flush_s = min(flush_s, 5.0)
        self._stop = threading.Event()
        self._store: Any = None
        self._thread = threading.Thread(target=self._work, name="greenml-recorder", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        try:
            from greenml.environment import capture_environment
            from greenml.store import open_store

            s = self.start
            self._store = open_store(s.db_url)
            self.run_id = self._store.create_run(
                name=s.name,
                command=s.command,
                tags=s.tags,
                started_at=s.started_at,
                pid=s.pid,
                hostname=s.hostname,
            )
            self._store.update_extra(
                self.run_id, {**s.extra, "measured_devices": self._device_provenance()}
            )
            self.environment = capture_environment(include_hostname=s.include_hostname, cwd=s.cwd)
            self._store.set_environment(self.run_id, self.environment)
            while not self._stop.wait(self._flush_s):
                self._flush()
        except GreenmlError as exc:
            self.error = exc

    def _device_provenance(self) -> dict[str, dict[str, Any]]:
        """How each device is measured, kept so that a killed run's figures stay labelled."""
        return {
            d.key: {
                "component": d.component, "name": d.name, "method": d.method,
                "uncertainty_rel": d.uncertainty_rel, "note": d.note,
            }
            for d in self._meter.devices
        }  # fmt: skip

    def _flush(self) -> None:
        assert self._store is not None and self.run_id is not None
        self._store.add_samples(self.run_id, self._meter.drain_samples())
        self._store.heartbeat(self.run_id)

    def finish(
        self,
        measurement: Measurement,
        *,
        exit_code: int,
        status: str,
        ended_at: float,
        notes: list[str] | None = None,
    ) -> dict[str, Any] | None:
        """Flush the rest, store the final figures and return the run record.

        ``notes`` say how each figure was obtained when that is not obvious
        (a fallback, a missing sensor); they are kept in the energy block.
        """
        self._stop.set()
        self._thread.join()
        if self.error is not None or self.run_id is None:
            return None
        try:
            self._flush()
            self._store.add_windows(self.run_id, [measurement])
            self._store.finish_run(
                self.run_id,
                status=status,
                exit_code=exit_code,
                duration_s=measurement.duration_s,
                ended_at=ended_at,
                energy={**measurement.to_dict(), "notes": list(notes or [])},
            )
            record: dict[str, Any] = self._store.get_record(self.run_id)
            return record
        except GreenmlError as exc:
            self.error = exc
            return None
        finally:
            self._store.close()

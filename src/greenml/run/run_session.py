"""One run's life, written once: ``start`` → ``tick`` … → ``end`` → ``finish``.

Both drivers drive a :class:`RunSession`: ``greenml run`` (:mod:`greenml.run.runner`,
the work is a child process, its events come from a file) and ``greenml.Run``
(:mod:`greenml.run.inprocess`, the work is this process, its events come from a
listener and a background thread ticks). What they share is here and only here:
the run window on the Meter, the progress tracker and its projection, the windows
and their tracker feed, the budget watch, the recorder, the blocks a finished run
adds (:func:`greenml.run.session.finish_blocks`) and the sinks the finished record
goes to, in order (:mod:`greenml.run.sinks`). So the same settings give the same
record under both, by construction.

What differs stays with the drivers: which sensors they open and when, how the
work ends (an exit code, or the end of a ``with`` block), and what a passed
budget stops (the child, or this process): :meth:`RunSession.tick` returns the
verdict, the driver acts on it.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from greenml.measure.measurement import Measurement
from greenml.run.projection import ProgressTracker

if TYPE_CHECKING:
    from greenml.accounting.run_accounting import Accounting, AccountingOptions
    from greenml.measure.meter import Meter
    from greenml.record.run_record import RunRecord
    from greenml.run.budget import Budget, Verdict
    from greenml.run.recorder import Recorder
    from greenml.run.sinks import RunSink
    from greenml.run.window_feed import WindowFeed
    from greenml.trackers.base import Sink

RUN_WINDOW = "run"
log = logging.getLogger("greenml")

Warn = Callable[[str, str], None]
"""``warn(key, message)``: one warning per key (a driver's own way of saying it)."""


@dataclass
class SessionSettings:
    """What a run is asked to do, whichever driver runs it."""

    name: str | None
    command: list[str]
    tags: dict[str, str] = field(default_factory=dict)
    db_url: str | None = None
    include_hostname: bool = True
    store: bool = True  # False: measure and account only (greenml.Run(store=False))
    accounting: AccountingOptions | None = None  # for the rates known before the run
    budget: Budget | None = None
    start_extra: dict[str, Any] = field(default_factory=dict)  # blocks known at the start
    events_path: str | None = None  # the child's events file (greenml run); None: given
    sinks: Sequence[RunSink] = ()  # after the store, in order (trackers, push, --json-out)


class RunSession:
    """The shared life of one run; a driver calls start, tick, end and finish in turn.

    Args:
        settings: What the run is asked to do.
        accounting: The prepared accounting (carbon, cost …) of the run.
        trackers: The tracker sinks that receive windows during the run.
        warn: How this driver says a warning once.
        started_at: The run's start (Unix seconds).
    """

    def __init__(
        self, settings: SessionSettings, accounting: Accounting, trackers: Sequence[Sink],
        warn: Warn, started_at: float | None = None,
    ) -> None:  # fmt: skip
        from greenml.run.window_feed import WindowFeed

        self.settings = settings
        self.accounting = accounting
        self.started_at = time.time() if started_at is None else started_at
        g, usd = static_rates(settings.accounting)
        self.tracker = ProgressTracker(settings.events_path, self.started_at,
                                       g_per_kwh=g, usd_per_kwh=usd)  # fmt: skip
        self.feed: WindowFeed = WindowFeed(accounting, trackers, warn)
        self.windows: list[Measurement] = []  # stored after the run window, sent to trackers
        self.notes: list[str] = []
        self.meter: Meter | None = None
        self.recorder: Recorder | None = None
        self.measurement: Measurement | None = None
        self.blocks: dict[str, Any] = {}  # what finish_blocks made (carbon, cost, progress …)
        self.record: RunRecord | None = None
        self.data: dict[str, Any] | None = None  # the record as JSON, as the sinks got it
        self.verdict: Verdict | None = None
        self._warn = warn
        self._timelines: dict[str, Any] = {}

    # ------------------------------------------------------------------ the run

    def start(self, meter: Meter) -> None:
        """Open the run window on ``meter``; the recorder starts storing in the background."""
        self.meter = meter
        meter.begin_window(RUN_WINDOW, sync_execution=False)
        log.info("greenml: measuring %s", ", ".join(f"{d.key} ({d.method})" for d in meter.devices)
                 or "nothing (no sensor)")  # fmt: skip
        if self.settings.store:  # last: its thread opens the store and reads the environment
            self.recorder = self._open_recorder(meter)

    @property
    def run_id(self) -> str | None:
        """The run's id (``None``: not stored)."""
        return None if self.recorder is None else self.recorder.run_id

    def tick(self, events: Sequence[dict[str, Any]] = ()) -> Verdict | None:
        """Project, feed the trackers and watch the budget; the budget's verdict the first
        time it is surely passed (the driver acts on it), else ``None``."""
        assert self.meter is not None, "tick before start"
        spent = self.meter.peek_window(RUN_WINDOW)
        self.tracker.poll(spent.total_j, time.time(), events)
        self._take_windows()
        budget = self.settings.budget
        if self.feed.sinks or (budget is not None and budget.unit != "kWh"):
            self.feed.rates_from(spent)
            if self.feed.g_per_kwh is not None:
                self.tracker.g_per_kwh = self.feed.g_per_kwh
            if self.feed.usd_per_kwh is not None:
                self.tracker.usd_per_kwh = self.feed.usd_per_kwh
        self.feed.take(self.windows)
        self.feed.flush()
        return self._check_budget(spent.total_j)

    def end(self, events: Sequence[dict[str, Any]] = ()) -> Measurement:
        """Close the run window and the Meter; the events since the last tick are read."""
        meter = self.meter
        assert meter is not None, "end before start"
        self.measurement = m = meter.end_window(RUN_WINDOW, sync_execution=False)
        try:
            ended = m.started_at.timestamp() + m.duration_s
            self.tracker.poll(m.total_j, ended, events)
            self._take_windows()
        except Exception as exc:
            self._warn("events", f"greenml: progress events not read: {exc!r}")
        if self.accounting.active:
            self._timelines = {d.key: meter.timeline(d.key) for d in meter.devices}
        meter.close()
        return m

    def finish(
        self, status: str, exit_code: int | None, *, notes: Sequence[str] = (),
        extra: Mapping[str, Any] | None = None, wait_for_store: bool = True,
    ) -> RunRecord | None:  # fmt: skip
        """Account the ended run, store it, hand the record to every sink in order.

        Returns the stored record (``None``: not stored here — spooled, or ``store=False``).
        ``extra``: the driver's own blocks (a green plan, model calls …).
        """
        from greenml.run.session import finish_blocks

        m = self.measurement
        assert m is not None, "finish before end"
        self.blocks = finish_blocks(self.accounting, m, self._timelines, self.tracker,
                                    self.settings.tags, self.budget_block(),
                                    name=self.settings.name)  # fmt: skip
        blocks = {**(extra or {}), **self.blocks}
        all_notes = [*(self.meter.notes if self.meter is not None else []), *notes]
        if self.recorder is not None:
            self.record = self.recorder.finish(
                m, exit_code=exit_code, status=status, ended_at=time.time(), notes=all_notes,
                wait_for_store=wait_for_store, extra=blocks, windows=self.windows,
            )  # fmt: skip
        self.feed.take(self.windows)
        self._deliver(status, exit_code, all_notes, blocks)
        return self.record

    # ------------------------------------------------------------------ the pieces

    def budget_block(self) -> dict[str, Any] | None:
        """The ``budget`` block: the budget and, once passed, when and by how much."""
        budget = self.settings.budget
        if budget is None:
            return None
        passed = {} if self.verdict is None else self.verdict.to_dict(time.time())
        return {**budget.to_dict(), "passed": self.verdict is not None, **passed}

    def unsaved_record(self, status: str, exit_code: int | None, notes: Sequence[str],
                       blocks: Mapping[str, Any]) -> dict[str, Any]:  # fmt: skip
        """The record as JSON when the store did not take it (the sinks still get it)."""
        m = self.measurement
        assert m is not None
        s = self.settings
        error = None if self.recorder is None or self.recorder.error is None else str(
            self.recorder.error)  # fmt: skip
        return {
            "id": self.run_id or "-", "name": s.name, "command": list(s.command),
            "started_at": m.started_at.isoformat(), "duration_s": m.duration_s,
            "exit_code": exit_code, "status": status,
            "energy": {**m.to_dict(), "notes": list(notes)}, "environment": {},
            "tags": dict(s.tags), **s.start_extra, **blocks,
            "saved": False, "store_error": error,
        }  # fmt: skip

    def _deliver(self, status: str, exit_code: int | None, notes: Sequence[str],
                 blocks: Mapping[str, Any]) -> None:  # fmt: skip
        """The finished record to the trackers, then to each of the settings' sinks."""
        from greenml.run.sinks import Finished, TrackerSink

        if self.record is not None:
            data = self.record.to_dict()
        else:
            data = self.unsaved_record(status, exit_code, notes, blocks)
        self.data = data
        finished = Finished(self.record, data)
        for sink in [TrackerSink(self.feed), *self.settings.sinks]:
            try:
                sink.deliver(finished)
            except Exception as exc:  # a sink's failure never costs the run or its exit code
                self._warn(f"sink {sink.name}", f"greenml: {sink.name} failed: {exc!r}")

    def _take_windows(self) -> None:
        """Windows published by the program (events) join the run's own windows."""
        if self.tracker.windows:
            self.windows.extend(self.tracker.windows)
            self.tracker.windows.clear()

    def _check_budget(self, spent_j: float) -> Verdict | None:
        budget = self.settings.budget
        if budget is None or self.verdict is not None:
            return None
        from greenml.run.budget import check_budget

        g = self.feed.g_per_kwh if self.feed.g_per_kwh is not None else self.tracker.g_per_kwh
        usd = (self.feed.usd_per_kwh if self.feed.usd_per_kwh is not None
               else self.tracker.usd_per_kwh)  # fmt: skip
        self.verdict = check_budget(budget, spent_j=spent_j, projection=self.tracker.latest,
                                    g_per_kwh=g, usd_per_kwh=usd)  # fmt: skip
        return self.verdict

    def _open_recorder(self, meter: Meter) -> Recorder:
        from greenml.run.preflight import storable_arg
        from greenml.run.recorder import Recorder, RunStart

        s = self.settings
        start = RunStart(
            name=s.name, command=[storable_arg(a) for a in s.command], tags=dict(s.tags),
            started_at=self.started_at, pid=os.getpid(),
            hostname=socket.gethostname() if s.include_hostname else None,
            db_url=s.db_url, include_hostname=s.include_hostname, extra=dict(s.start_extra),
        )  # fmt: skip
        return Recorder(start, meter)


def static_rates(options: AccountingOptions | None) -> tuple[float | None, float | None]:
    """(g/kWh, USD/kWh) known before the run, for the live projection; None: not known yet."""
    if options is None:
        return None, None
    try:
        pue = 1.0 if options.pue is None else float(options.pue)
    except ValueError:
        return None, None  # a provider's PUE: known once accounting runs
    g = options.ci * pue if options.ci is not None and not options.intensity_trace else None
    simple_price = not options.price_trace and not options.instance
    usd = options.price * pue if options.price is not None and simple_price else None
    return g, usd


def run_sinks(push_gateway: str | None = None, otlp_endpoint: str | None = None,
              json_out: Path | None = None) -> list[RunSink]:  # fmt: skip
    """The opt-in sinks after the store and the trackers, in order: push, then ``--json-out``."""
    from greenml.run.sinks import JsonOutSink, PushSink

    sinks: list[RunSink] = []
    if push_gateway or otlp_endpoint:
        sinks.append(PushSink(push_gateway, otlp_endpoint))
    if json_out is not None:
        sinks.append(JsonOutSink(json_out))
    return sinks

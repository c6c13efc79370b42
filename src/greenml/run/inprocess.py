"""``greenml.Run``: the in-process twin of ``greenml run``, for a training script.

::

    with greenml.Run("bert-ft", zone="DE", pue="gcp", tags={"lr": "3e-5"}) as run:
        for epoch in range(3):
            with run.window("epoch"):
                train_one_epoch()
            run.progress(epoch + 1, 3)
    run.record  # the stored RunRecord, with carbon and cost

The same pieces as ``greenml run``: sensors and the Meter (:mod:`greenml.measure`),
the recorder that opens the store and captures the environment in the background
(:mod:`greenml.run.recorder`), the projection (:mod:`greenml.run.projection`),
carbon and cost (:mod:`greenml.accounting.run_accounting`), and the one writer
:func:`greenml.run.persist.persist_run` (store, ledger, upload). Run under
``greenml run``, it joins the outer run: nothing is measured twice, its windows
and progress go to the parent as events, and the parent stores the run.

It never raises into the training code: a failure is one warning and a labelled
gap (a note in the record, a window without a measurement). Only a misuse of the
constructor (two budgets, an unknown ``on_budget``) raises :class:`ConfigError`.

Lazy imports: accounting, sinks and the store when the run starts or ends.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError
from greenml.measure import events
from greenml.measure.measurement import Measurement
from greenml.measure.meter import Meter
from greenml.measure.window_energy import WindowHandle
from greenml.run.budget import Verdict, budget_from, check_budget
from greenml.run.budget_watch import act_on_verdict
from greenml.run.inprocess_options import block_ending, run_settings
from greenml.run.run_windows import RunWindows
from greenml.run.session import DEFAULT_CPU_SCOPE
from greenml.run.sigterm_guard import SigtermGuard
from greenml.run.window_feed import WindowFeed

if TYPE_CHECKING:
    from greenml.accounting.run_accounting import Accounting
    from greenml.measure.sensors.base import Sensor
    from greenml.record.run_record import RunRecord
    from greenml.run.projection import ProgressTracker
    from greenml.run.recorder import Recorder

RUN_WINDOW = "run"
log = logging.getLogger("greenml")

_current: list[Run] = []  # open runs of this process, innermost last


def current_run() -> Run | None:
    """The innermost open :class:`Run` of this process (the callbacks join it), or ``None``."""
    return _current[-1] if _current else None


class Run:
    """Measure, account and store this process's work as one run.

    Args:
        name: The run's name (``greenml runs list --name``).
        zone, region, country, ci, intensity_trace: Where the electricity comes from
            (as ``greenml run``'s options; unset: the environment, then the config file).
        pue: A number ≥ 1 or a provider (``gcp``, ``aws`` …).
        price: USD per kWh; ``instance``: a cloud instance type priced per hour.
        tags: Labels kept with the run.
        db: The store (a path or URL); ``GREENML_DB`` or the default file when ``None``.
        gpus: GPU indices to measure (``None``: all, ``[]``: none); ``cpu``: the CPU and DRAM.
        cpu_scope: For the CPU/DRAM model (no RAPL): ``process`` (the default, as
            ``greenml run``: this process tree; each window edge reads /proc for every
            process of the tree, ~50 µs) or ``machine`` (as a Meter; ~10 µs a window).
        sample_hz: Power sampling rate (default 1 Hz). Unset ``pue``, ``price``, ``db``,
            ``sample_hz`` and ``log_to`` come from the environment, then the config file
            (:mod:`greenml.config.settings`); a bad one is a warning.
        budget_kwh, budget_kg, budget_usd: One budget, judged on the projection's lower bound.
        on_budget: ``"warn"`` (one warning with the projected total) or ``"stop"`` (SIGTERM).
        log_to: Tracker sinks: ``"mlflow"``, ``"wandb"``, ``"tensorboard"`` or sink objects.
        sensors: Measure with these sensors instead of this machine's (tests, replays).
        store: Store the run (``False``: only measure and account it).
        tick_s: How often the background thread projects, checks the budget and logs windows.
    """

    def __init__(
        self,
        name: str | None = None,
        *,
        zone: str | None = None,
        region: str | None = None,
        country: str | None = None,
        ci: float | None = None,
        intensity_trace: str | None = None,
        pue: str | float | None = None,
        price: float | None = None,
        instance: str | None = None,
        tags: Mapping[str, Any] | None = None,
        db: str | None = None,
        gpus: Sequence[int] | None = None,
        cpu: bool = True,
        cpu_scope: str = DEFAULT_CPU_SCOPE,
        sample_hz: float | None = None,
        budget_kwh: float | None = None,
        budget_kg: float | None = None,
        budget_usd: float | None = None,
        on_budget: str = "warn",
        log_to: Sequence[Any] | None = None,
        include_hostname: bool = True,
        sensors: Sequence[Sensor] | None = None,
        store: bool = True,
        tick_s: float = 1.0,
    ) -> None:
        self.name = name
        self.tags = {str(k): str(v) for k, v in (tags or {}).items()}
        from greenml.store.values import check_run_texts  # no SQLAlchemy

        check_run_texts(name, self.tags)  # refused before the run, alike on every backend
        pue, price, db, sample_hz, log_to = run_settings(pue, price, db, sample_hz, log_to)
        self.budget = budget_from(budget_kwh, budget_kg, budget_usd, on_budget)
        if not tick_s > 0:
            raise ConfigError(f"tick_s must be > 0, got {tick_s!r}")
        self._location: dict[str, Any] = {
            "zone": zone, "region": region, "country": country, "ci": ci,
            "intensity_trace": intensity_trace, "price": price, "instance": instance,
            "pue": None if pue is None else str(pue),
        }  # fmt: skip
        self._db, self._gpus, self._cpu, self._sample_hz = db, gpus, cpu, sample_hz
        self._cpu_scope = cpu_scope
        self._include_hostname, self._given_sensors, self._store = include_hostname, sensors, store
        self._log_to, self._tick_s = list(log_to), tick_s
        self.record: RunRecord | None = None
        self.measurement: Measurement | None = None
        self.accounting_blocks: dict[str, Any] = {}
        self.block_providers: dict[str, Callable[[], dict[str, Any]]] = {}
        """Record blocks other parts add (``workflow``: greenml.llm.remote), made at the end."""
        self.notes: list[str] = []
        self.joined = False
        self.budget_verdict: Verdict | None = None
        self.run_id: str | None = None
        self._state = "new"
        self._meter: Meter | None = None
        self._recorder: Recorder | None = None
        self._accounting: Accounting | None = None
        self._tracker: ProgressTracker | None = None
        self._feed: WindowFeed | None = None
        self._windows: list[Measurement] = []
        self._events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._storing: threading.Thread | None = None
        self._run_windows = RunWindows(self._gap)
        self._warned: set[str] = set()
        self._started_at = 0.0
        self._sigterm = SigtermGuard(self._stop_on_sigterm)

    # ------------------------------------------------------------------ life cycle

    def __enter__(self) -> Run:
        return self.start()

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        status, code = block_ending(exc)
        self.stop(status=status, exit_code=code)

    def start(self) -> Run:
        """Start measuring (once); returns the run. Never raises."""
        if self._state != "new":
            return self
        self._state = "running"
        self._started_at = time.time()
        _current.append(self)
        try:
            if events.enabled() and os.environ.get(events.ENV_VAR):
                self.joined = True  # inside `greenml run`: the parent measures and stores
                self.notes.append("joined the outer greenml run: measured and stored by it")
                for given, option in ((self.budget, "--budget"), (self._log_to, "--log-to")):
                    if given:  # said once, never dropped silently
                        self._gap(option, f"inside greenml run, {option} of the outer run "
                                  f"applies; this Run's {option.lstrip('-')} is not used")
            else:
                self._start_measuring()
        except Exception as exc:
            self._gap("start", f"the run is not measured: {exc!r}")
            self._state = "failed"
            self._release()
            if self._meter is not None:
                with contextlib.suppress(Exception):
                    self._meter.close()
                self._meter = None
            with contextlib.suppress(ValueError):
                _current.remove(self)
        return self

    def _start_measuring(self) -> None:
        from greenml.accounting.run_accounting import (
            Accounting,
            AccountingOptions,
            prepare_accounting,
        )
        from greenml.run.projection import ProgressTracker

        try:
            self._accounting = prepare_accounting(AccountingOptions(**self._location))
        except Exception as exc:  # a bad zone must not cost the run: carbon says why
            self._accounting = Accounting()
            self._accounting.failure = f"accounting settings refused: {exc}"
            self._gap("accounting", self._accounting.failure)
        self._meter = self._open_meter()
        self._meter.begin_window(RUN_WINDOW, sync_execution=False)
        log.info("greenml: run %s measures %s", self.name or "", ", ".join(
            f"{d.key} ({d.method})" for d in self._meter.devices) or "nothing")  # fmt: skip
        self._tracker = ProgressTracker(None, self._started_at)
        self._feed = WindowFeed(self._accounting, self._make_sinks(), self._warn)
        events.add_listener(self._on_event)
        self._sigterm.catch()
        self._thread = threading.Thread(target=self._loop, name="greenml-run", daemon=True)
        self._thread.start()
        if self._store:  # last: its thread opens the store and reads the environment
            self._recorder = self._open_recorder(self._meter)
            self.run_id = self._recorder.run_id

    def _open_meter(self) -> Meter:
        sensors = self._given_sensors
        notes: list[str] = []
        if sensors is None:
            from greenml.measure.sensors.discover import discover_sensors

            sensors, notes = discover_sensors(self._gpus, self._cpu, self._cpu_scope, os.getpid())
        meter = Meter(sensors=sensors, sample_hz=self._sample_hz, record_samples=self._store)
        meter.notes[:0] = notes
        return meter

    def _open_recorder(self, meter: Meter) -> Recorder:
        from greenml.run.preflight import storable_arg
        from greenml.run.recorder import Recorder, RunStart

        command = [sys.executable, *sys.argv]
        start = RunStart(
            name=self.name, command=[storable_arg(a) for a in command], tags=dict(self.tags),
            started_at=self._started_at, pid=os.getpid(),
            hostname=socket.gethostname() if self._include_hostname else None,
            db_url=self._db, include_hostname=self._include_hostname,
            extra={"run_api": "python"},
        )  # fmt: skip
        return Recorder(start, meter)

    def _make_sinks(self) -> list[Any]:
        if not self._log_to:
            return []
        from greenml.trackers.factory import make_sinks

        sinks = []
        for spec in self._log_to:
            try:
                sinks += make_sinks([spec], run_name=self.name)
            except Exception as exc:
                self._gap(f"sink {spec}", f"tracker {spec!r} not used: {exc}")
        return sinks

    def stop(
        self, *, status: str = "completed", exit_code: int | None = 0, wait: bool = True
    ) -> RunRecord | None:
        """End the run, account and store it; returns the record (``None``: not stored).

        The measurement ends here. With ``wait=False`` the accounting, the store and
        the trackers are done by a background thread and ``None`` is returned at once;
        :meth:`wait` gives the record (the interpreter waits for the thread at exit).
        Never raises; a second call returns the same record.
        """
        if self._state != "running":
            if self._state == "new":
                self._state = "stopped"
            return self.record
        self._state = "stopped"
        with contextlib.suppress(ValueError):
            _current.remove(self)
        if self.joined or self._meter is None:
            self._release()
            return None
        try:
            ended = self._end_measuring(status, exit_code)
        except Exception as exc:
            self._gap("stop", f"the run could not be finished: {exc!r}")
            return None
        finally:
            self._release()
        if wait:
            self._store_safely(ended)
            return self.record
        self._storing = threading.Thread(target=self._store_safely, args=(ended,),
                                         name="greenml-run-store")  # fmt: skip
        self._storing.start()
        return None

    def wait(self, timeout: float | None = None) -> RunRecord | None:
        """The record once a ``stop(wait=False)`` has stored it (``None``: not stored)."""
        if self._storing is not None:
            self._storing.join(timeout)
        return self.record

    def _end_measuring(self, status: str, exit_code: int | None) -> dict[str, Any]:
        """Stop the background thread and close the run window (what stop cannot defer)."""
        assert self._meter is not None
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        events.remove_listener(self._on_event)
        self._tick()  # the events and windows since the last tick
        meter = self._meter
        self.measurement = m = meter.end_window(RUN_WINDOW, sync_execution=False)
        timelines = {d.key: meter.timeline(d.key) for d in meter.devices}
        meter.close()
        return {"measurement": m, "timelines": timelines, "status": status,
                "exit_code": exit_code, "ended_at": time.time(),
                "notes": [*meter.notes, *self.notes]}  # fmt: skip

    def _store_safely(self, ended: dict[str, Any]) -> None:
        time.sleep(0)  # hand the GIL back at once: stop(wait=False) returns first
        try:
            self._store_run(**ended)
        except Exception as exc:
            self._gap("stop", f"the run could not be stored: {exc!r}")

    def _store_run(
        self, measurement: Measurement, timelines: dict[str, Any], status: str,
        exit_code: int | None, ended_at: float, notes: list[str],
    ) -> None:  # fmt: skip
        from greenml.run.runner import run_statement
        from greenml.run.session import finish_blocks

        assert self._tracker is not None and self._feed is not None
        assert self._accounting is not None
        m = measurement
        budget: dict[str, Any] | None = None
        if self.budget is not None:
            verdict = self.budget_verdict
            passed = {} if verdict is None else verdict.to_dict(time.time())
            budget = {**self.budget.to_dict(), "passed": verdict is not None, **passed}
        extra = finish_blocks(self._accounting, m, timelines, self._tracker, self.tags, budget, name=self.name)  # noqa: E501
        self.accounting_blocks = {
            k: v for k, v in extra.items() if k not in ("progress", "flops", "budget")
        }
        for key, provide in list(self.block_providers.items()):
            try:
                extra[key] = provide()
            except Exception as exc:
                self._gap(key, f"the {key} block could not be made: {exc!r}")
        if self._recorder is not None:
            self.record = self._recorder.finish(
                m, exit_code=exit_code, status=status, ended_at=ended_at, notes=notes,
                wait_for_store=True, extra=extra, windows=self._windows,
            )  # fmt: skip
            if self._recorder.error is not None:
                self._gap("store", f"run not stored: {self._recorder.error}")
            from greenml.run.session import recorder_line

            print(recorder_line(self.record, self._recorder), file=sys.stderr)  # one line: done
        record = self.record.to_dict() if self.record is not None else None
        self._feed.finish(record, run_statement(self.record) if self._feed.sinks else None)

    def _release(self) -> None:
        self._stop.set()
        events.remove_listener(self._on_event)
        self._sigterm.release()

    # ------------------------------------------------------------------ in the loop

    @contextlib.contextmanager
    def window(self, name: str) -> Iterator[WindowHandle]:
        """``with run.window("epoch") as w:`` measures a window; ``w.measurement`` after it.

        The window is stored with the run and logged to the trackers. A failure
        leaves ``w.measurement`` ``None`` (one warning, a note in the record).
        """
        meter = self._window_meter()
        keep = None if self.joined else self._windows.append  # joined: the parent keeps it
        with self._run_windows.measure(meter, name, keep) as handle:
            yield handle

    def add_window(self, measurement: Measurement) -> None:
        """Keep a window measured elsewhere on this run's Meter (the callbacks' steps)."""
        if self._state == "running" and not self.joined:
            self._windows.append(measurement)

    @property
    def meter(self) -> Meter | None:
        """The run's Meter (``None`` when the run failed to start, or not yet opened)."""
        return self._window_meter()

    def _window_meter(self) -> Meter | None:
        if self._state != "running":
            return None
        if self.joined and self._meter is None:
            try:  # windows only: sampled at the edges and published to the parent
                self._meter = Meter(sensors=self._given_sensors, gpus=self._gpus, cpu=self._cpu,
                                    sample_hz=self._sample_hz, cpu_scope=self._cpu_scope,
                                    pid=os.getpid(), publish_windows=True)  # fmt: skip
            except Exception as exc:
                self._gap("meter", f"windows not measured: {exc!r}")
                self._state = "failed"
        return self._meter

    def progress(self, step: float, total: float | None = None) -> None:
        """Report ``step`` of ``total`` done: the run projects its total energy, carbon, cost.

        Cheap (the projection and the budget run in the background); never raises.
        """
        if self.joined:
            events.progress(step, total)
            return
        if self._state == "running":
            event = {"kind": "progress", "t": time.time(), "step": step, "total": total,
                     "rank": events.current_rank()}  # fmt: skip
            with self._lock:
                self._events.append(event)

    def carbon_kg(self, measurement: Measurement) -> float | None:
        """CO2eq of a window at the run's effective rate so far (``None``: not known)."""
        feed = self._feed
        if feed is None or self._meter is None:
            return None
        if feed.g_per_kwh is None:
            try:
                feed.rates_from(self._meter.peek_window(RUN_WINDOW))
            except Exception as exc:
                self._warn("rates", f"greenml: carbon of windows unknown: {exc!r}")
        g = feed.g_per_kwh
        return None if g is None else measurement.total_kwh * g / 1000

    @property
    def projection(self) -> Any | None:
        """The latest :class:`~greenml.run.projection.Projection` (``None`` before two reports)."""
        return None if self._tracker is None else self._tracker.latest

    def _on_event(self, event: dict[str, Any]) -> None:
        """``greenml.progress()`` and published windows of this process, as events."""
        if event.get("kind") in ("progress", "window"):
            with self._lock:
                self._events.append(event)

    def _loop(self) -> None:
        while not self._stop.wait(self._tick_s):
            try:
                self._tick()
            except Exception as exc:
                self._warn("tick", f"greenml: run bookkeeping failed: {exc!r}")

    def _tick(self) -> None:
        meter, tracker, feed = self._meter, self._tracker, self._feed
        assert meter is not None and tracker is not None and feed is not None
        with self._lock:
            given, self._events = self._events, []
        now = time.time()
        spent = meter.peek_window(RUN_WINDOW)
        tracker.poll(spent.total_j, now, given)
        self._windows.extend(tracker.windows)  # published by other Meters of this process
        tracker.windows.clear()
        if feed.sinks or (self.budget is not None and self.budget.unit != "kWh"):
            feed.rates_from(spent)
            tracker.g_per_kwh, tracker.usd_per_kwh = feed.g_per_kwh, feed.usd_per_kwh
        feed.take(self._windows)
        feed.flush()
        self._check_budget(spent.total_j)

    def _check_budget(self, spent_j: float) -> None:
        if self.budget is None or self.budget_verdict is not None or self._feed is None:
            return
        verdict = check_budget(
            self.budget, spent_j=spent_j, projection=self.projection,
            g_per_kwh=self._feed.g_per_kwh, usd_per_kwh=self._feed.usd_per_kwh,
        )  # fmt: skip
        if verdict is None:
            return
        self.budget_verdict = verdict
        act_on_verdict(verdict, self.notes)

    # ------------------------------------------------------------------ failures

    def _stop_on_sigterm(self, signum: int) -> None:
        """Without a SIGTERM handler the run would die unstored: store it (then it dies)."""
        self.stop(status="interrupted", exit_code=128 + signum)

    def _gap(self, key: str, message: str) -> None:
        self.notes.append(message)
        self._warn(key, f"greenml: {message}")

    def _warn(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning("%s", message)

    def __repr__(self) -> str:
        return f"Run({self.name!r}, state={self._state}, id={self.run_id})"

    def _repr_html_(self) -> str:
        from greenml.report.notebook import run_html

        html: str = run_html(self)
        return html

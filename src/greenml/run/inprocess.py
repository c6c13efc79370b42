"""``greenml.Run``: the in-process twin of ``greenml run``, for a training script.

::

    with greenml.Run("bert-ft", zone="DE", pue="gcp", tags={"lr": "3e-5"}) as run:
        for epoch in range(3):
            with run.window("epoch"):
                train_one_epoch()
            run.progress(epoch + 1, 3)
    run.record  # the stored RunRecord, with carbon and cost

It drives the same :class:`~greenml.run.run_session.RunSession` as ``greenml run``
(the run window, projection, budget, windows, accounting, the store and the sinks),
from a background thread and this process's events. Run under ``greenml run``, it
joins the outer run: nothing is measured twice, its windows and progress go to the
parent as events, and the parent stores the run.

It never raises into the training code: a failure is one warning and a labelled
gap (a note in the record, a window without a measurement). Only a misuse of the
constructor (two budgets, an unknown ``on_budget``) raises :class:`ConfigError`.

Lazy imports: accounting, sinks and the store when the run starts or ends.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError
from greenml.measure import events
from greenml.measure.measurement import Measurement
from greenml.measure.meter import Meter
from greenml.measure.window_energy import WindowHandle
from greenml.run.budget import Verdict, budget_from
from greenml.run.budget_watch import act_on_verdict
from greenml.run.inprocess_options import block_ending, run_settings
from greenml.run.run_session import RUN_WINDOW
from greenml.run.run_windows import RunWindows
from greenml.run.session import DEFAULT_CPU_SCOPE
from greenml.run.sigterm_guard import SigtermGuard

if TYPE_CHECKING:
    from greenml.measure.sensors.base import Sensor
    from greenml.record.run_record import RunRecord
    from greenml.run.run_session import RunSession
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
        push_gateway, otlp_endpoint: At the end, push the run's figures to a Prometheus
            Pushgateway / an OTLP metrics endpoint (as ``greenml run``'s options).
        json_out: At the end, also write the run record as JSON to this file.
        job: The ``job`` block of the job this run is a part of (``job_id``, ``step_id``,
            ``node_rank`` …, as ``greenml run --job`` records it; a search's trials).
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
        push_gateway: str | None = None,
        otlp_endpoint: str | None = None,
        json_out: str | Path | None = None,
        job: Mapping[str, Any] | None = None,
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
        self._push = (push_gateway, otlp_endpoint, None if json_out is None else str(json_out))
        self._job = None if job is None else dict(job)
        if json_out is not None:
            from greenml.run.preflight import check_run_inputs

            check_run_inputs(name=name, tags=self.tags, db_url=None, json_out=Path(json_out))
        self.record: RunRecord | None = None
        self.measurement: Measurement | None = None
        self.notes: list[str] = []
        self.joined = False
        self.run_id: str | None = None
        self._state = "new"
        self._meter: Meter | None = None
        self._session: RunSession | None = None
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
        from greenml.run.run_session import RunSession, SessionSettings, run_sinks

        options = AccountingOptions(**self._location)
        try:
            accounting = prepare_accounting(options)
        except Exception as exc:  # a bad zone must not cost the run: carbon says why
            accounting = Accounting()
            accounting.failure = f"accounting settings refused: {exc}"
            self._gap("accounting", accounting.failure)
        push_gateway, otlp_endpoint, json_out = self._push
        settings = SessionSettings(
            name=self.name, command=[sys.executable, *sys.argv], tags=dict(self.tags),
            db_url=self._db, include_hostname=self._include_hostname, store=self._store,
            accounting=options, budget=self.budget,
            start_extra={"run_api": "python", **({"job": self._job} if self._job else {})},
            sinks=run_sinks(push_gateway, otlp_endpoint,
                            None if json_out is None else Path(json_out)),
        )  # fmt: skip
        self._meter = meter = self._open_meter()
        session = RunSession(settings, accounting, self._make_sinks(), self._warn,
                             self._started_at)  # fmt: skip
        session.start(meter)  # the recorder's thread opens the store and reads the environment
        self._session, self.run_id = session, session.run_id
        events.add_listener(self._on_event)
        self._sigterm.catch()
        self._thread = threading.Thread(target=self._loop, name="greenml-run", daemon=True)
        self._thread.start()

    def _open_meter(self) -> Meter:
        sensors = self._given_sensors
        notes: list[str] = []
        if sensors is None:
            from greenml.measure.sensors.discover import discover_sensors

            sensors, notes = discover_sensors(self._gpus, self._cpu, self._cpu_scope, os.getpid())
        meter = Meter(sensors=sensors, sample_hz=self._sample_hz, record_samples=self._store)
        meter.notes[:0] = notes
        return meter

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
        session = self._session
        assert session is not None
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        events.remove_listener(self._on_event)
        self.measurement = session.end(self._take_events())  # and the events since the tick
        return {"status": status, "exit_code": exit_code}

    def _store_safely(self, ended: dict[str, Any]) -> None:
        time.sleep(0)  # hand the GIL back at once: stop(wait=False) returns first
        try:
            self._store_run(**ended)
        except Exception as exc:
            self._gap("stop", f"the run could not be stored: {exc!r}")

    def _store_run(self, status: str, exit_code: int | None) -> None:
        session = self._session
        assert session is not None
        self.record = session.finish(status, exit_code, notes=self.notes)
        recorder = session.recorder
        if recorder is not None:
            if recorder.error is not None:
                self._gap("store", f"run not stored: {recorder.error}")
            from greenml.run.session import recorder_line

            print(recorder_line(self.record, recorder), file=sys.stderr)  # one line: done

    @property
    def accounting_blocks(self) -> dict[str, Any]:
        """The carbon, cost, market-based, water and embodied blocks of the finished run."""
        blocks = {} if self._session is None else self._session.blocks
        return {k: v for k, v in blocks.items() if k not in ("progress", "flops", "budget")}

    @property
    def budget_verdict(self) -> Verdict | None:
        """The budget's verdict once it is surely passed (``None``: not passed, or none)."""
        return None if self._session is None else self._session.verdict

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
        session = self._session  # joined: the parent keeps the window
        keep = None if self.joined or session is None else session.windows.append
        with self._run_windows.measure(meter, name, keep) as handle:
            yield handle

    def add_window(self, measurement: Measurement) -> None:
        """Keep a window measured elsewhere on this run's Meter (the callbacks' steps)."""
        if self._state == "running" and self._session is not None:
            self._session.windows.append(measurement)

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
        session = self._session
        if session is None or self._meter is None:
            return None
        feed = session.feed
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
        return None if self._session is None else self._session.tracker.latest

    def _on_event(self, event: dict[str, Any]) -> None:
        """``greenml.progress()``, published windows, counted FLOPs, model and tool calls."""
        if event.get("kind") in ("progress", "window", "flops", "llm_call", "tool_call"):
            with self._lock:
                self._events.append(event)

    def _loop(self) -> None:
        while not self._stop.wait(self._tick_s):
            try:
                self._tick()
            except Exception as exc:
                self._warn("tick", f"greenml: run bookkeeping failed: {exc!r}")

    def _tick(self) -> None:
        assert self._session is not None
        verdict = self._session.tick(self._take_events())
        if verdict is not None:
            act_on_verdict(verdict, self.notes)

    def _take_events(self) -> list[dict[str, Any]]:
        with self._lock:
            given, self._events = self._events, []
        return given

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

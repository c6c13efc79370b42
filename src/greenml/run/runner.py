"""``greenml run``: measure a command from start to exit and store the run.

Lazy imports: ``sys`` and ``traceback`` for the rare failure path only; the CPU table
warm-up imports the hardware tables when the CPU model is on.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from greenml.accounting.run_accounting import (
    AccountingOptions,
    prepare_accounting,
)
from greenml.errors import ConfigError
from greenml.measure.events import ENV_VAR
from greenml.measure.measurement import Measurement
from greenml.measure.meter import Meter
from greenml.measure.sensors.base import Sensor
from greenml.measure.sensors.discover import discover_cpu_sensors, discover_sensors
from greenml.run.job_identity import JobRequest, job_identity
from greenml.run.outlived import outlived_note, outliving
from greenml.run.preflight import check_run_inputs
from greenml.run.process import Child, run_status
from greenml.run.run_session import RUN_WINDOW, RunSession, SessionSettings, run_sinks
from greenml.run.session import sends_to_server
from greenml.run.upload_later import upload_in_background

if TYPE_CHECKING:
    from greenml.record.run_record import RunRecord
    from greenml.run.budget import Budget, Verdict
    from greenml.run.projection import Projection

log = logging.getLogger("greenml")


@dataclass
class RunOptions:
    """What ``greenml run`` was asked to do."""

    command: Sequence[str]
    name: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    db_url: str | None = None
    gpus: Sequence[int] | None = None
    cpu: bool = True
    cpu_scope: str = "process"
    sample_hz: float = 1.0
    include_hostname: bool = True
    wait_for_store: bool = False  # True: store the run before returning (needed for its record)
    json_out: Path | None = None  # where the CLI writes the record: checked before the start
    accounting: AccountingOptions | None = None  # location, PUE, prices, instance
    extra: Callable[[], dict[str, Any]] | None = None  # more record blocks, asked for at the end
    kill_on_exit: bool = False  # the command gets SIGTERM if greenml dies (Linux)
    job: JobRequest = field(default_factory=JobRequest)  # --job, or found in the environment
    budget: Budget | None = None  # warn, or SIGTERM the command, once surely passed
    log_to: Sequence[str] = ()  # tracker sinks (mlflow, wandb, tensorboard)
    push_gateway: str | None = None  # at the end, push the figures to this Pushgateway
    otlp_endpoint: str | None = None  # … and/or to this OTLP/HTTP metrics endpoint

    def __post_init__(self) -> None:
        """Refuse a name or tag the store cannot keep before the command starts."""
        from greenml.store.values import check_run_texts  # no SQLAlchemy

        check_run_texts(self.name, self.tags)


@dataclass
class RunResult:
    """How the command ended and what it cost."""

    exit_code: int
    run_id: str
    measurement: Measurement
    record: RunRecord | None  # None when the run went to the spool
    notes: list[str]
    store_error: str | None
    spooled: Path | None
    forwarded_signals: list[int]
    accounting: dict[str, Any] = field(default_factory=dict)  # the carbon and cost blocks
    job: dict[str, Any] | None = None  # the job block: the job this run is a node of
    sent: str | None = None  # what the team-server sink did ("sent to URL" ...); None: no server
    data: dict[str, Any] | None = None  # the record as JSON, as the sinks got it (unsaved too)


def parse_tags(pairs: Sequence[str]) -> dict[str, str]:
    """``["k=v", ...]`` → ``{"k": "v"}``; a pair without ``=`` or key is an error."""
    tags: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"tag {pair!r} is not of the form key=value")
        tags[key.strip()] = value
    return tags


def run_measured(
    options: RunOptions,
    on_tick: Callable[[Meter], None] | None = None,
    on_progress: Callable[[Projection], None] | None = None,
) -> RunResult:
    """Run the command as a child, measure it, store it; the child's exit code is returned.

    ``on_tick`` is called about once a second with the Meter (a live status line),
    after ``on_progress`` with the latest projection when the command reports
    progress (``greenml.progress``; events through ``GREENML_EVENTS``).
    """
    if not options.command:
        raise ConfigError("no command given: use greenml run [OPTIONS] -- COMMAND [ARGS]...")
    if options.sample_hz <= 0 or options.sample_hz > 100:
        raise ConfigError(f"--sample-hz must be in (0, 100], got {options.sample_hz}")
    check_run_inputs(name=options.name, tags=options.tags, db_url=options.db_url,
                     json_out=options.json_out)  # fmt: skip
    job = job_identity(options.job, include_hostname=options.include_hostname,
                       run_name=options.name)  # fmt: skip
    accounting = prepare_accounting(options.accounting)
    trackers = _trackers(options)  # a missing package stops the run before it starts
    started_at = time.time()
    events_path = _events_file()
    settings = SessionSettings(
        name=options.name, command=list(options.command), tags=dict(options.tags),
        db_url=options.db_url, include_hostname=options.include_hostname,
        accounting=options.accounting, budget=options.budget,
        start_extra=_start_extra(options, job), events_path=events_path,
        sinks=run_sinks(options.push_gateway, options.otlp_endpoint, options.json_out),
    )  # fmt: skip
    session = RunSession(settings, accounting, trackers, _warn_once(set()), started_at)
    # What needs no pid is opened before the command starts, so that the run
    # window opens a few ms after it, not after NVML's start-up.
    gpu_sensors, notes = _open_gpus(options)
    try:
        child = Child(
            options.command,
            env={**os.environ, ENV_VAR: events_path},
            kill_on_exit=options.kill_on_exit,
        )
    except BaseException:
        _close(gpu_sensors)
        raise
    try:
        return _measure(child, options, session, gpu_sensors, notes, on_tick, on_progress, job)
    except Exception as exc:  # the command runs: greenml must not end in a traceback
        return _unmeasured(child, started_at, events_path, exc)


def _measure(
    child: Child, options: RunOptions, session: RunSession, gpu_sensors: list[Sensor],
    notes: list[str],
    on_tick: Callable[[Meter], None] | None, on_progress: Callable[[Projection], None] | None,
    job: dict[str, Any] | None = None,
) -> RunResult:  # fmt: skip
    """Measure the running child until it ends, then account and store the run."""
    events_path = session.settings.events_path
    try:
        cpu_sensors: list[Sensor] = []
        if options.cpu:
            # Only the command's processes carry this file's name: daemons it
            # starts are followed after they leave its process tree.
            cpu_sensors, cpu_notes = discover_cpu_sensors(
                options.cpu_scope, child.pid, marker=f"{ENV_VAR}={events_path}"
            )
            notes += cpu_notes
        meter = Meter(
            sensors=[*gpu_sensors, *cpu_sensors],
            sample_hz=options.sample_hz,
            record_samples=True,
        )
        meter.notes[:0] = notes
        session.start(meter)
        stopped_by_budget: list[int] = []

        def tick() -> None:
            try:
                verdict = session.tick()
                if verdict is not None:
                    _stop_for_budget(verdict, child, stopped_by_budget)
            except Exception as exc:  # a bad event must not cost the user the run
                log.debug("greenml: events not read: %r", exc)
            if session.tracker.latest is not None and on_progress is not None:
                on_progress(session.tracker.latest)
            if on_tick is not None:
                on_tick(meter)

        child.wait_exit(tick=tick)  # not reaped yet: the last reading sees its final CPU time
    finally:
        child.restore_signals()
    try:
        measurement = session.end()
    finally:
        code = child.reap()
    if note := outlived_note(outliving(f"{ENV_VAR}={events_path}")):
        meter.notes.append(note)
    _remove(events_path or "")
    status = run_status(code, [*child.interrupted_by, *stopped_by_budget])
    # a run for a team server is stored and sent before greenml returns where the machine may
    # end with greenml (CI, Slurm ...); elsewhere a detached sender sends it (run.upload_later)
    wait = (options.wait_for_store or options.json_out is not None
            or (sends_to_server() and not upload_in_background()))  # fmt: skip
    record = session.finish(status, code, extra=options.extra() if options.extra else None,
                            wait_for_store=wait)  # fmt: skip
    recorder = session.recorder
    assert recorder is not None
    return RunResult(
        exit_code=code,
        run_id=recorder.run_id,
        measurement=measurement,
        record=record,
        notes=meter.notes,
        store_error=str(recorder.error) if recorder.error else None,
        spooled=recorder.spooled,
        forwarded_signals=child.forwarded,
        accounting=session.blocks,
        job=job,
        sent=recorder.sent,
        data=session.data,
    )


def _stop_for_budget(verdict: Verdict, child: Child, signals: list[int]) -> None:
    """``--budget``: says it once; with ``--on-budget stop`` the command gets SIGTERM."""
    import signal
    import sys

    if verdict.budget.on_budget == "stop":
        print(f"{verdict.message()}; stopping the command (SIGTERM)", file=sys.stderr)
        signals.append(signal.SIGTERM)
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, signal.SIGTERM)
    else:
        print(verdict.message(), file=sys.stderr)


def _start_extra(options: RunOptions, job: dict[str, Any] | None) -> dict[str, Any]:
    """Record blocks known at the start: ``kill_on_exit``, the ``job`` this run is a node of."""
    extra: dict[str, Any] = {"kill_on_exit": True} if options.kill_on_exit else {}
    if job is not None:
        extra["job"] = job
    return extra


def _unmeasured(child: Child, started_at: float, events_path: str, exc: Exception) -> RunResult:
    """greenml failed while the command ran: let the command finish, keep its exit code,
    and say loudly that this run was not measured (nothing is stored)."""
    import sys
    import traceback

    log.debug("greenml: measurement failed:\n%s", traceback.format_exc())
    print(f"greenml: error: measuring failed ({exc!r}); the command runs on unmeasured "
          "and this run is not stored", file=sys.stderr)  # fmt: skip
    child.restore_signals()
    while True:
        try:
            code = child.reap()
            break
        except KeyboardInterrupt:  # Ctrl-C reached the command too: wait for it to end
            continue
    _remove(events_path)
    empty = Measurement(RUN_WINDOW, datetime.fromtimestamp(started_at, tz=timezone.utc),
                        time.time() - started_at)  # fmt: skip
    return RunResult(
        exit_code=code, run_id="-", measurement=empty, record=None,
        notes=[f"not measured: {exc!r}"], store_error=f"greenml failed while measuring: {exc!r}",
        spooled=None, forwarded_signals=child.forwarded,
    )  # fmt: skip


def _open_gpus(options: RunOptions) -> tuple[list[Sensor], list[str]]:
    """The GPU sensors and their notes; the CPU model's TDP table is looked up too (cached)."""
    if options.cpu:
        from greenml.hardware import cpu_model_name, cpu_tdp

        with contextlib.suppress(Exception):  # only a warm-up: errors come when it is used
            cpu_tdp(cpu_model_name())
    return discover_sensors(options.gpus, cpu=False)  # --gpus none: none, the node meter still


def _close(sensors: list[Sensor]) -> None:
    for sensor in sensors:
        with contextlib.suppress(Exception):
            sensor.close()


def _events_file() -> str:
    """A fresh, empty file for the child's events (see :mod:`greenml.measure.events`)."""
    fd, path = tempfile.mkstemp(prefix="greenml-events-", suffix=".jsonl")
    os.close(fd)
    return path


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _trackers(options: RunOptions) -> list[Any]:
    """The tracker sinks of ``--log-to`` (a missing package stops the run before it starts)."""
    if not options.log_to:
        return []
    from greenml.trackers.factory import make_sinks

    return make_sinks(options.log_to, run_name=options.name)


def _warn_once(seen: set[str]) -> Callable[[str, str], None]:
    def warn(key: str, message: str) -> None:
        if key not in seen:
            seen.add(key)
            log.warning("%s", message)

    return warn

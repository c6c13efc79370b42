"""``greenml run``: measure a command from start to exit and store the run.

Lazy imports: ``sys`` and ``traceback`` for the rare failure path only; the CPU table
warm-up imports the hardware tables when the CPU model is on.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from greenml.accounting.run_accounting import (
    Accounting,
    AccountingOptions,
    prepare_accounting,
    unavailable,
)
from greenml.errors import ConfigError
from greenml.measure.events import ENV_VAR
from greenml.measure.measurement import Measurement
from greenml.measure.meter import Meter
from greenml.measure.sensors.base import Sensor
from greenml.measure.sensors.discover import discover_cpu_sensors, discover_sensors
from greenml.run.preflight import check_run_inputs, storable_arg
from greenml.run.process import Child, run_status
from greenml.run.projection import ProgressTracker, Projection
from greenml.run.recorder import Recorder, RunStart

if TYPE_CHECKING:
    from greenml.store.run_record import RunRecord

RUN_WINDOW = "run"
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
    accounting = prepare_accounting(options.accounting)
    started_at = time.time()
    events_path = _events_file()
    g_per_kwh, usd_per_kwh = _static_rates(options.accounting)
    tracker = ProgressTracker(events_path, started_at, g_per_kwh=g_per_kwh, usd_per_kwh=usd_per_kwh)
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
        return _measure(child, options, accounting, tracker, started_at, events_path,
                        gpu_sensors, notes, on_tick, on_progress)  # fmt: skip
    except Exception as exc:  # the command runs: greenml must not end in a traceback
        return _unmeasured(child, started_at, events_path, exc)


def _measure(
    child: Child, options: RunOptions, accounting: Any, tracker: ProgressTracker,
    started_at: float, events_path: str, gpu_sensors: list[Sensor], notes: list[str],
    on_tick: Callable[[Meter], None] | None, on_progress: Callable[[Projection], None] | None,
) -> RunResult:  # fmt: skip
    """Measure the running child until it ends, then account and store the run."""
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
        meter.begin_window(RUN_WINDOW, sync_execution=False)
        recorder = Recorder(
            RunStart(
                name=options.name,
                command=[storable_arg(a) for a in options.command],
                tags=dict(options.tags),
                started_at=started_at,
                pid=os.getpid(),
                hostname=socket.gethostname() if options.include_hostname else None,
                db_url=options.db_url,
                include_hostname=options.include_hostname,
                extra={"kill_on_exit": True} if options.kill_on_exit else {},
            ),
            meter,
        )

        def tick() -> None:
            try:
                projection = tracker.poll(meter.peek_window(RUN_WINDOW).total_j, time.time())
            except Exception as exc:  # a bad event must not cost the user the run
                log.debug("greenml: events not read: %r", exc)
                projection = None
            if projection is not None and on_progress is not None:
                on_progress(projection)
            if on_tick is not None:
                on_tick(meter)

        child.wait_exit(tick=tick)  # not reaped yet: the last reading sees its final CPU time
    finally:
        child.restore_signals()
    try:
        measurement = meter.end_window(RUN_WINDOW, sync_execution=False)
    finally:
        code = child.reap()
    try:  # the events written since the last tick
        ended = measurement.started_at.timestamp() + measurement.duration_s
        tracker.poll(measurement.total_j, ended)
    except Exception as exc:
        log.warning("greenml: progress events not read: %r", exc)
    _remove(events_path)
    timelines = {d.key: meter.timeline(d.key) for d in meter.devices} if accounting.active else {}
    meter.close()
    blocks = _account(accounting, measurement, timelines)
    progress = tracker.summary(**_effective_rates(blocks, measurement.total_kwh))
    if progress is not None:
        blocks = {**blocks, "progress": progress}
    flops = _flops(tracker, measurement, options.tags)
    if flops is not None:
        blocks = {**blocks, "flops": flops}
    status = run_status(code, child.interrupted_by)
    extra = {**options.extra(), **blocks} if options.extra is not None else blocks
    record = recorder.finish(
        measurement, exit_code=code, status=status, ended_at=time.time(), notes=meter.notes,
        wait_for_store=options.wait_for_store, extra=extra, windows=tracker.windows,
    )  # fmt: skip
    return RunResult(
        exit_code=code,
        run_id=recorder.run_id,
        measurement=measurement,
        record=record,
        notes=meter.notes,
        store_error=str(recorder.error) if recorder.error else None,
        spooled=recorder.spooled,
        forwarded_signals=child.forwarded,
        accounting=blocks,
    )


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
    if options.gpus is not None and len(options.gpus) == 0:
        return [], []
    return discover_sensors(options.gpus, cpu=False)


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


def _static_rates(options: AccountingOptions | None) -> tuple[float | None, float | None]:
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


def _effective_rates(blocks: dict[str, Any], kwh: float) -> dict[str, float | None]:
    """The run's own carbon and cost per measured kWh (PUE, trace, instance included)."""
    kg = (blocks.get("carbon") or {}).get("kg")
    usd = (blocks.get("cost") or {}).get("usd")
    if kwh <= 0:
        return {"g_per_kwh": None, "usd_per_kwh": None}
    return {
        "g_per_kwh": None if kg is None else float(kg) * 1000 / kwh,
        "usd_per_kwh": None if usd is None else float(usd) / kwh,
    }


def _flops(
    tracker: ProgressTracker, measurement: Measurement, tags: Mapping[str, str]
) -> dict[str, Any] | None:
    """The ``flops`` block: counted in the program (a ``flops`` event), else ``flops=`` and
    ``samples=`` tags; ``None`` when neither. A bug here costs only this block."""
    try:
        from greenml.measure.flops import flops_block, flops_from_tags, merge_ranks

        gpus = measurement.components.get("gpu")
        names = [d.name or key for key, d in (gpus.devices if gpus else {}).items()]
        duration_s, energy_j = measurement.duration_s, measurement.total_j
        if tracker.flops:
            counted = merge_ranks(tracker.flops)  # each rank counts its share of the work
            return flops_block(counted, duration_s=duration_s, energy_j=energy_j, gpus=names)
        given = flops_from_tags(tags)
        if given is None:
            return None
        return flops_block(given, duration_s=duration_s, energy_j=energy_j, gpus=names,
                           method="given", source=given["source"])  # fmt: skip
    except Exception as exc:
        log.warning("greenml: FLOPs block not computed: %r", exc)
        return {"status": "unavailable", "flops": None, "reason": f"failed: {exc!r}"}


def _account(
    accounting: Accounting, measurement: Measurement, timelines: dict[str, Any]
) -> dict[str, Any]:
    """The carbon and cost blocks; a bug in them must not cost the user the run record."""
    try:
        return accounting.account(measurement, timelines)
    except Exception as exc:
        log.warning("greenml: carbon and cost not computed: %r", exc)
        reason = f"accounting failed: {exc!r}"
        return {"carbon": unavailable("kg", reason), "cost": unavailable("usd", reason)}



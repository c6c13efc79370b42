"""The Meter: cheap named energy windows over a set of sensors.

A window is two snapshots: at ``begin_window`` the Meter notes the time and
reads every device; at ``end_window`` it does the same. A device with an energy
counter gives the difference of its counter. A modelled device with usage
counters (the CPU model: CPU-seconds) gives its model over the pieces of the
window, cut at the sampler's readings, each piece exact for its utilization.
Any other device is integrated from its power timeline — the readings of one
background sampler thread per Meter — with the window's own two readings as
its edges. So a window shorter than the sampling period is never read as the
power before it began. Windows may nest and overlap.

A failing sensor never raises into the user's program: the Meter records the
gap, labels the affected figures, and logs one warning per device.

A long-lived Meter (a server's) bounds its memory through
:meth:`Meter.forget_before`: consumers of :meth:`Meter.timeline` say which
samples they no longer need, and the Meter drops a sample only when no
consumer and no open window needs it (see that method for how).

Lazy imports: sensor discovery (NVML, RAPL, psutil) when a Meter is built without
sensors given, and the events channel when windows are published, so that
``from greenml import Meter`` stays cheap.
"""

from __future__ import annotations

import logging
import math
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

from greenml.errors import ConfigError, WindowError
from greenml.measure.alarm import Alarm
from greenml.measure.measurement import NODE, Measurement, Sample
from greenml.measure.retention import trim_channel
from greenml.measure.sensors.base import Device, Sensor
from greenml.measure.slow_counters import COUNTER_UPDATE_S, SlowCounters
from greenml.measure.timeline import UsageTimeline
from greenml.measure.window_energy import Channel, Edges, WindowHandle, WindowStart
from greenml.measure.window_figures import WindowPlan
from greenml.quantities import bounds

log = logging.getLogger("greenml")

Clock = Callable[[], float]

WINDOW_NAME_CHARS = 255
"""The most characters of a published window's name (the store's ``windows.name``)."""


class Meter:
    """Measures energy in named windows over GPUs, CPU and DRAM.

    Args:
        gpus: GPU indices among the visible ones (``CUDA_VISIBLE_DEVICES``);
            ``None`` measures all, ``[]`` none.
        cpu: Measure the CPU and DRAM (RAPL counters, else the labelled model).
        sample_hz: Power sampling rate of the background thread; 0 disables
            the thread (call :meth:`sample_now` yourself).
        sensors: Use these sensors instead of discovering the machine's.
        cpu_scope: ``machine`` or ``process`` (the process tree of ``pid``)
            for the CPU/DRAM model.
        pid: Root of the process tree for ``cpu_scope="process"``.
        sync_cuda: Synchronize pending CUDA work before each timestamp when
            torch with CUDA is in use.
        record_samples: Keep every reading for :meth:`drain_samples` (the run
            store uses this); off by default to bound memory.
        publish_windows: Send each finished window as a ``window`` event to
            ``greenml run`` (see :mod:`greenml.measure.events`), which stores it with
            the run under ``NAME/rankR``; a no-op outside ``greenml run``.
        tree_marker: ``NAME=VALUE`` in the environment of the processes of the
            tree of ``pid``: those are followed even after they leave the tree
            (daemons); ``greenml run`` sets one.
        exact_edges: Read every energy counter at the window edge itself. By default
            a counter slower than 0.5 ms a read (NVML on an H100: 4.7 ms) is read by
            a thread every 100 ms and edges are taken from its readings, each window
            saying the counter's 100 ms step in its uncertainty (see
            :mod:`greenml.measure.slow_counters`).
    """

    def __init__(
        self,
        gpus: Sequence[int] | None = None,
        cpu: bool = True,
        sample_hz: float = 1.0,
        *,
        sensors: Sequence[Sensor] | None = None,
        cpu_scope: str = "machine",
        pid: int | None = None,
        sync_cuda: bool = True,
        record_samples: bool = False,
        publish_windows: bool = False,
        clock: Clock = time.monotonic,
        wall_clock: Clock = time.time,
        tree_marker: str | None = None,
        exact_edges: bool = False,
    ) -> None:
        if sample_hz != 0:  # 0: no sampler thread; anything else, the one rule of every source
            sample_hz = bounds.sample_hz(sample_hz)
        self.notes: list[str] = []
        if sensors is None:
            from greenml.measure.sensors.discover import discover_sensors

            sensors, self.notes = discover_sensors(gpus, cpu, cpu_scope, pid, tree_marker)
        self._sensors = list(sensors)
        self._clock = clock
        self._wall_offset = wall_clock() - clock()
        self._sync_cuda = sync_cuda
        self._period_s = 1.0 / sample_hz if sample_hz > 0 else math.inf
        self._channels: dict[str, Channel] = {}
        for sensor in self._sensors:
            for device in sensor.devices:
                if device.key in self._channels:
                    raise ConfigError(f"two sensors report device {device.key!r}")
                usage = None
                if device.usage:
                    usage = UsageTimeline(sensor.usage_model(device.key), 1 + len(device.parts))
                self._channels[device.key] = Channel(device, usage)
                if device.note:
                    self.notes.append(f"{device.key}: {device.note}")
        self._counter_sensors = [s for s in self._sensors if any(d.has_counter for d in s.devices)]
        # Counters too slow to read at every window edge (NVML on some hosts: 4.7 ms a read)
        # are read by the sampler; edges come from its readings (see slow_counters).
        # ``exact_edges`` reads every counter at the edge itself, whatever it costs.
        self._slow = None if exact_edges else SlowCounters.detect(self._counter_sensors, clock)
        # per device: what a window takes when it ends and derives when read, looked up once
        self._figures = WindowPlan(
            self._channels, self._slow.keys() if self._slow is not None else (), self._period_s
        )
        if self._slow is not None:
            self._slow.start(clock)
            for sensor in self._slow.sensors:
                cost_ms = self._slow.read_cost_s[id(sensor)] * 1e3
                self.notes.append(
                    f"{type(sensor).__name__}: an energy-counter read costs {cost_ms:.1f} ms "
                    "here; a reader thread reads it every 100 ms and window edges are taken "
                    "from its readings "
                    "(uncertainty widened by the counter's 100 ms update period)"
                )
        self._usage_sensors = [s for s in self._sensors if any(d.usage for d in s.devices)]
        self._sampled_sensors = [s for s in self._sensors if any(_sampled(d) for d in s.devices)]
        self._edge_reads = self._edge_plan()
        self._sample_plan = [  # (sensor, modelled devices?, devices read for power?, channels)
            (s, s in self._usage_sensors, any(not d.usage for d in s.devices),
             [(d, self._channels[d.key]) for d in s.devices])
            for s in self._sensors
        ]  # fmt: skip
        self._windows: dict[str, WindowStart] = {}
        self._windows_lock = threading.Lock()  # begin_window vs forget_before
        self._holds: dict[str, dict[str, float]] = {}  # holder → device → monotonic time
        self._counters_read_at = -math.inf
        self._energy_lock = threading.Lock()
        self._samples_lock = threading.Lock()
        self._record_samples = record_samples
        self._publish = publish_windows
        self._pending: list[Sample] = []
        self._warned: set[str] = set()
        self._stop = Alarm()
        self._thread: threading.Thread | None = None
        self.sample_now()
        if sample_hz > 0:
            self._thread = threading.Thread(
                target=self._sample_loop, name="greenml-sampler", daemon=True
            )
            self._thread.start()

    # ----------------------------------------------------------------- windows

    @property
    def devices(self) -> list[Device]:
        return [ch.device for ch in self._channels.values()]

    def begin_window(self, name: str, sync_execution: bool = True) -> None:
        """Open a window; names must be unique among the open windows.

        A published window goes to the run store: its name is refused here, when the
        window opens, if the store could not keep it (over 255 characters, a NUL).
        """
        if name in self._windows:
            raise WindowError(f"window {name!r} is already open")
        if self._publish and (len(name) > WINDOW_NAME_CHARS or "\x00" in name):
            raise WindowError(
                f"window name {name[:40]!r}… cannot be stored: at most {WINDOW_NAME_CHARS} "
                "characters, no NUL"
            )
        if sync_execution:
            self._sync()
        with self._windows_lock:  # forget_before sees either this window or a later clock
            mono = self._clock()
            self._windows[name] = WindowStart(mono, mono + self._wall_offset, self._read_edges())

    def end_window(self, name: str, sync_execution: bool = True) -> Measurement:
        """Close a window and return what it measured."""
        begin = self._windows.get(name)
        if begin is None:
            raise WindowError(f"window {name!r} was not begun")
        if sync_execution:
            self._sync()
        try:  # measured while still open, so forget_before keeps what it reads
            measurement = self._figures.close(name, begin, self._clock(), self._read_edges())
        finally:
            with self._windows_lock:
                ended = self._windows.get(name) is begin
                if ended:
                    del self._windows[name]
        if not ended:
            raise WindowError(f"window {name!r} was ended twice")
        if self._publish:
            from greenml.measure.events import publish_window  # lazy: import time

            publish_window(measurement)
        return measurement

    def peek_window(self, name: str) -> Measurement:
        """What an open window has measured so far, leaving it open."""
        begin = self._windows.get(name)
        if begin is None:
            raise WindowError(f"window {name!r} is not open")
        return self._figures.close(name, begin, self._clock(), self._read_edges())

    @contextmanager
    def window(self, name: str, sync_execution: bool = True) -> Iterator[WindowHandle]:
        """``with meter.window("epoch") as w: ...`` then ``w.measurement``."""
        handle = WindowHandle(name)
        self.begin_window(name, sync_execution)
        try:
            yield handle
        finally:
            handle.measurement = self.end_window(name, sync_execution)

    # ----------------------------------------------------------------- sampling

    def sample_now(self) -> None:
        """Read every sensor once and append to the timelines."""
        mono = self._clock()
        if self._counter_sensors and mono - self._counters_read_at >= 1.0:
            # Keeps the wrap-around tracking of slow counters (RAPL) current;
            # once a second is plenty: they wrap after minutes at the least.
            self._counters_read_at = mono
            self._read_counters()
        samples: list[Sample] = []
        try:
            for sensor, modelled, powered, channels in self._sample_plan:
                self._sample_sensor(sensor, modelled, powered, channels, mono, samples)
        finally:  # what was read is kept, whatever failed after
            if samples:
                with self._samples_lock:  # once a round, not once a sample
                    self._pending += samples

    def _sample_sensor(
        self,
        sensor: Sensor,
        modelled: bool,
        powered: bool,
        channels: list[tuple[Device, Channel]],
        mono: float,
        samples: list[Sample],
    ) -> None:
        """One sensor's part of :meth:`sample_now`; its samples (if recorded) go to ``samples``."""
        powers: dict[str, float] = {}
        metrics: dict[str, dict[str, float]] = {}
        if modelled:
            self._sample_usage(sensor, mono, powers, metrics)
        if powered:
            powers.update(self._safe_read(sensor, sensor.read_power_w, "power"))
            # Gauges only matter to the store; an in-process Meter skips reading them.
            if powers and self._record_samples:
                metrics = {**self._safe_read(sensor, sensor.read_metrics, "metrics"), **metrics}
        wall = mono + self._wall_offset
        for device, channel in channels:
            power = powers.get(device.key)
            if power is None:
                if device.usage and channel.usage is not None and len(channel.usage) <= 1:
                    continue  # the first usage reading: no piece to give a power for yet
                if channel.gap_start is None:
                    channel.gap_start = channel.timeline.last_time_s or mono
                    self._warn_once(device.key, f"{device.key} ({device.name}) gave no reading")
                continue
            if channel.gap_start is not None:
                channel.gaps.append((channel.gap_start, mono))
                channel.gap_start = None
            channel.timeline.append(mono, power)
            if self._record_samples:
                samples.append(
                    Sample(device.key, device.component, wall, power, metrics.get(device.key, {}))
                )

    def _sample_usage(
        self,
        sensor: Sensor,
        mono: float,
        powers: dict[str, float],
        metrics: dict[str, dict[str, float]],
    ) -> None:
        """Append a usage reading per modelled device; its power is the model's over the piece."""
        with self._energy_lock:
            readings = self._safe_read(sensor, sensor.read_usage, "usage")
        for key, reading in readings.items():
            usage = self._channels[key].usage
            if usage is None:
                continue
            before = usage.last_time_s
            previous = usage.last_usage
            piece = usage.append(mono, reading)
            if piece is None or before is None or previous is None:
                continue
            powers[key] = piece[0] / (mono - before)
            if self._record_samples:
                metrics[key] = sensor.usage_metrics(key, mono - before, previous, reading)

    def drain_samples(self) -> list[Sample]:
        """Samples recorded since the last call (needs ``record_samples=True``)."""
        with self._samples_lock:
            out, self._pending = self._pending, []
        return out

    def current_power_w(self) -> float:
        """Sum of the latest power reading of every device (a node meter's left out)."""
        return sum(ch.timeline.last_power_w or 0.0 for ch in self._channels.values()
                   if ch.device.component != NODE)  # fmt: skip

    def timeline(self, key: str, since_s: float | None = None) -> tuple[list[float], list[float]]:
        """(Unix times, watts) recorded for one device.

        Args:
            key: Device key.
            since_s: Unix time: only the samples at or after it, plus the one
                before it (so integrating from ``since_s`` on is exact); the
                cost is O(log n + samples returned). ``None``: every sample
                still kept (see :meth:`forget_before`).
        """
        off = self._wall_offset
        # 1 µs early: Unix → monotonic rounding must not lose the sample before since_s
        since = None if since_s is None else since_s - off - 1e-6
        times, powers = self._channels[key].timeline.points(since)
        return [t + off for t in times], powers

    def forget_before(self, key: str, time_s: float, *, holder: str | None = None) -> int:
        """Say that samples of ``key`` before ``time_s`` (Unix) are no longer needed; a
        ``holder`` keeps its mark until :meth:`release`. What is kept and why:
        :mod:`greenml.measure.retention`. Returns how many samples were dropped (often 0)."""
        if not math.isfinite(time_s):
            raise ConfigError(f"time_s must be a finite number, got {time_s}")
        cut = time_s - self._wall_offset
        with self._windows_lock:
            cut = min(cut, self._clock())
            if holder is not None:
                self._holds.setdefault(holder, {})[key] = cut
            for marks in self._holds.values():
                cut = min(cut, marks.get(key, math.inf))
            begins = tuple(self._windows.values())
        return trim_channel(self._channels[key], cut, begins)

    def release(self, holder: str) -> None:
        """Drop every mark of ``holder`` (a consumer that has stopped)."""
        with self._windows_lock:
            self._holds.pop(holder, None)

    def _sample_loop(self) -> None:
        next_at = self._clock() + self._period_s
        while not self._stop.wait(max(0.0, next_at - self._clock())):
            try:
                self.sample_now()
            except Exception as exc:  # the sampler must never die silently or loudly
                self._warn_once("sampler", f"sampler error: {exc!r}")
            next_at += self._period_s
            now = self._clock()
            if next_at < now:  # we fell behind (a suspended process): skip, don't burst
                next_at = now + self._period_s

    # ----------------------------------------------------------------- plumbing

    def _read_counters(self) -> dict[str, float]:
        counters: dict[str, float] = {}
        with self._energy_lock:
            for sensor in self._counter_sensors:
                if self._slow is None or sensor not in self._slow.sensors:
                    counters.update(self._safe_read(sensor, sensor.read_energy_j, "energy"))
        return counters

    def _read_edges(self) -> Edges:
        """Counters, usage counters and the power of sampled devices, read now."""
        found: tuple[dict[str, Any], ...] = ({}, {}, {})  # counters, usage, powers
        with self._energy_lock:
            for slot, read, sensor, what in self._edge_reads:
                try:  # inline, not _safe_read: this runs at every window boundary
                    found[slot].update(read())
                except Exception as exc:
                    self._read_failed(sensor, what, exc)
        return Edges(found[0], found[1], found[2])

    def _edge_plan(self) -> list[tuple[int, Callable[[], dict[str, Any]], Sensor, str]]:
        """What each window edge reads, in order: (slot in :class:`Edges`, read, sensor, what)."""
        slow = self._slow
        plan: list[tuple[int, Callable[[], dict[str, Any]], Sensor, str]] = []
        for sensor in self._counter_sensors:
            read: Callable[[], dict[str, Any]] = sensor.read_energy_j
            if slow is not None and sensor in slow.sensors:
                read = partial(self._slow_edge, slow, sensor)
            plan.append((0, read, sensor, "energy"))
        plan += [(1, s.read_usage, s, "usage") for s in self._usage_sensors]
        plan += [(2, s.read_power_w, s, "power") for s in self._sampled_sensors]
        return plan

    def _slow_edge(self, slow: SlowCounters, sensor: Sensor) -> dict[str, float]:
        return slow.edges(sensor, self._clock(), 2 * COUNTER_UPDATE_S)

    def _safe_read(
        self, sensor: Sensor, read: Callable[[], dict[str, Any]], what: str
    ) -> dict[str, Any]:
        try:
            return read()
        except Exception as exc:  # SensorError, or a bug in a backend: never the user's problem
            self._read_failed(sensor, what, exc)
            return {}

    def _read_failed(self, sensor: Sensor, what: str, exc: Exception) -> None:
        name = type(sensor).__name__
        self._warn_once(f"{id(sensor)}:{what}", f"{name} {what} read failed: {exc}")

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning("greenml: %s; the gap is recorded and labelled", message)

    def _sync(self) -> None:
        if not self._sync_cuda:
            return
        torch = sys.modules.get("torch")
        if torch is None:
            return
        try:
            if torch.cuda.is_initialized():
                torch.cuda.synchronize()
        except Exception as exc:
            self._warn_once("cuda-sync", f"CUDA synchronize failed: {exc}")

    def close(self) -> None:
        """Stop the sampler and release the sensors."""
        if self._slow is not None:
            self._slow.stop()
        self._stop.ring()
        if self._thread is not None:
            self._thread.join(timeout=5)
            if not self._thread.is_alive():
                self._stop.close()
            self._thread = None
        for sensor in self._sensors:
            try:
                sensor.close()
            except Exception as exc:
                log.debug("closing %s failed: %s", sensor, exc)

    def __enter__(self) -> Meter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _sampled(device: Device) -> bool:
    """Whether a device's energy is integrated from its power readings."""
    return not device.has_counter and not device.usage

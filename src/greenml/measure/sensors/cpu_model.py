"""Estimated CPU and DRAM power for machines without energy counters.

CPU power is ``TDP × share(utilization)``, where ``share`` is the curve Teads
derived from SPECpower results: piecewise-linear through 12 % of TDP at idle,
32 % at 10 % load, 75 % at 50 % and 102 % at full load (Benjamin Davy, Teads
Engineering, 2021, "Estimating AWS EC2 instances power consumption").
DRAM power is ``0.3725 W per GB`` in use (Lannelongue, Grealey & Inouye,
"Green Algorithms: Quantifying the Carbon Footprint of Computation", Advanced
Science 8(12), 2021). Both are models: every device is ``estimated``.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import psutil

from greenml.errors import ConfigError, SensorError
from greenml.hardware import cpu_count_logical, cpu_model_name, cpu_socket_count, cpu_tdp
from greenml.measure.measurement import DYNAMIC, ESTIMATED, STATIC
from greenml.measure.sensors.base import Device, Sensor
from greenml.measure.sensors.process_tree import ProcessTree
from greenml.measure.timeline import PartsJ, Usage, UsageModel
from greenml.quantities import bounds

Scope = Literal["process", "machine"]

# (utilization, share of TDP) — Teads' SPECpower-derived curve (Davy, 2021).
TEADS_CURVE: tuple[tuple[float, float], ...] = ((0.0, 0.12), (0.1, 0.32), (0.5, 0.75), (1.0, 1.02))
# Green Algorithms' default TDP per core, their "Any" row (data/v3.0/TDP_cpu.csv).
GREEN_ALGORITHMS_W_PER_CORE = 12.0
# Green Algorithms' memory power (Lannelongue et al., 2021), per GB of memory in use.
GREEN_ALGORITHMS_W_PER_GB = 0.3725
# Memory is sold in binary gigabytes (a "16 GB" module holds 16 GiB).
_BYTES_PER_GB = 2**30
# TDP is not measured power and the curve is an average over many servers: ±30 %.
TDP_MODEL_UNCERTAINTY = 0.3
# The per-core default knows nothing about this CPU: ±50 %.
FALLBACK_UNCERTAINTY = 0.5
DRAM_MODEL_UNCERTAINTY = 0.5
TDP_ENV = "GREENML_CPU_TDP_W"
# Memory in use is read at most this often (seconds) by the DRAM model.
MEMORY_READ_S = 1.0
# /proc/stat counts in 10 ms ticks per CPU: a reading younger than this is given again.
STAT_REUSE_S = 0.001
_PROC_STAT = "/proc/stat" if os.path.exists("/proc/stat") else None
_CLOCK_TICKS = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
_PROCESS_NOTE = (
    "process scope: the process tree's energy is its dynamic part (its CPU-seconds × "
    "the Teads SPECpower curve's full-load dynamic power per CPU) plus its static part "
    "(the idle floor over the wall-clock time, which over-attributes on a shared machine)"
)


# (upper utilization, share at its lower end, slope) of each piece of the curve
_PIECES = tuple(
    (u1, s0 - (s1 - s0) / (u1 - u0) * u0, (s1 - s0) / (u1 - u0))
    for (u0, s0), (u1, s1) in itertools.pairwise(TEADS_CURVE)
)


def tdp_share(utilization: float) -> float:
    """Share of TDP drawn at a CPU utilization (0–1), on Teads' curve."""
    u = min(max(utilization, 0.0), 1.0)
    for upper, intercept, slope in _PIECES:
        if u <= upper:
            return intercept + slope * u
    return TEADS_CURVE[-1][1]


@dataclass(frozen=True)
class CpuTdp:
    """The TDP the CPU model uses, and where it came from."""

    tdp_w: float
    source: str
    note: str
    uncertainty_rel: float
    cpu_name: str


def resolve_cpu_tdp(tdp_w: float | None = None, cpu_name: str | None = None) -> CpuTdp:
    """Choose the machine's CPU TDP: argument > ``GREENML_CPU_TDP_W`` > table > default.

    An explicit or environment TDP is the total for all sockets. A table TDP is
    per socket and multiplied by the socket count. With no match, the Green
    Algorithms default per core × logical cores is used, and labelled.

    Raises:
        ConfigError: A non-positive TDP, or a ``GREENML_CPU_TDP_W`` that is not a number.
    """
    name = cpu_name if cpu_name is not None else cpu_model_name()
    if tdp_w is not None:
        tdp_w = bounds.tdp_w(tdp_w, "CPU TDP")
        return CpuTdp(
            tdp_w, "given", f"TDP {tdp_w:g} W given by the caller", TDP_MODEL_UNCERTAINTY, name
        )
    env = os.environ.get(TDP_ENV, "").strip()
    if env:
        watts = bounds.tdp_w(env, TDP_ENV)
        return CpuTdp(
            watts, TDP_ENV, f"TDP {watts:g} W from {TDP_ENV}", TDP_MODEL_UNCERTAINTY, name
        )
    match = cpu_tdp(name) if name else None
    if match is not None:
        sockets = cpu_socket_count()
        total = match.tdp_w * sockets
        note = (
            f"TDP {total:g} W = {match.tdp_w:g} W × {sockets} socket(s) for "
            f'"{match.matched_name}" ({match.source} table, match score {match.score:.0f})'
        )
        return CpuTdp(total, "table", note, TDP_MODEL_UNCERTAINTY, name)
    cores = cpu_count_logical()
    total = GREEN_ALGORITHMS_W_PER_CORE * cores
    note = (
        f'CPU model "{name or "unknown"}" not in the TDP table; using '
        f"{GREEN_ALGORITHMS_W_PER_CORE:g} W per core × {cores} cores (Green Algorithms "
        f"default); set {TDP_ENV} to correct it"
    )
    return CpuTdp(total, "default", note, FALLBACK_UNCERTAINTY, name)


class _ProcStat:
    """System-wide (busy, total) CPU seconds, as psutil.cpu_percent counts them.

    On Linux, the first line of /proc/stat read through a descriptor kept open
    (``pread`` at offset 0 regenerates it): 8 µs on an idle machine, 30–40 µs
    on a loaded one. Its figures move in clock ticks (10 ms per CPU), so a
    reading less than :data:`STAT_REUSE_S` old is given again rather than
    regenerated: windows opened and closed in a tight loop stay cheap, and no
    window sees a coarser counter than the kernel keeps. Elsewhere,
    ``psutil.cpu_times``.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._fd: int | None = None
        self._last: tuple[float, Usage] | None = None
        if _PROC_STAT is not None:
            try:
                self._fd = os.open(_PROC_STAT, os.O_RDONLY)
            except OSError:
                self._fd = None

    def read(self) -> Usage:
        if self._fd is None:
            t = psutil.cpu_times()
            total = sum(t) - getattr(t, "guest", 0.0) - getattr(t, "guest_nice", 0.0)
            idle = t.idle + getattr(t, "iowait", 0.0)
            return total - idle, total
        now, last = self._clock(), self._last
        if last is not None and now - last[0] < STAT_REUSE_S:
            return last[1]
        try:
            head = os.pread(self._fd, 256, 0)
        except OSError as exc:
            raise SensorError(f"cannot read {_PROC_STAT}: {exc}") from None
        usage = _busy_total(head)
        self._last = (now, usage)
        return usage

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _busy_total(head: bytes) -> tuple[float, float]:
    """(busy, total) seconds from the first line of Linux's /proc/stat.

    The same figures as ``psutil.cpu_times`` (which parses every line): user
    nice system idle iowait irq softirq steal, in clock ticks; guest time is
    already inside user and nice; idle and iowait are idle.
    """
    ticks = [int(x) for x in head.split(b"\n", 1)[0].split()[1:9]]
    total = sum(ticks)
    idle = ticks[3] + ticks[4]
    return (total - idle) / _CLOCK_TICKS, total / _CLOCK_TICKS


class CpuModelSensor(Sensor):
    """CPU energy estimated from utilization and TDP (method ``estimated``).

    The model works on cumulative counters (:meth:`read_usage`), which the
    Meter reads at each window's start and end, so a window's figure is exact
    for its own utilization whatever its length:

    - ``machine`` scope: busy and total CPU seconds of the machine; each piece
      of time gets ``TDP × share(utilization)`` on Teads' curve.
    - ``process`` scope: the CPU-seconds of the process tree rooted at ``pid``.
      Its energy is two labelled parts: ``dynamic``, its CPU-seconds × the
      curve's full-load dynamic power per CPU (``TDP × (102 % − 12 %) ÷ CPUs``),
      which depends on the work alone; and ``static``, the idle floor
      (``12 % × TDP``) over the wall-clock time, which grows when neighbours
      slow the work down.

    Args:
        scope: ``machine`` or ``process``.
        pid: Root of the process tree; the current process by default.
        tdp_w: Total CPU TDP in watts, overriding the environment and table.
        cpu_name: CPU model name to look up; /proc/cpuinfo by default.
        clock: Monotonic clock in seconds, injectable for tests.
        marker: ``NAME=VALUE`` in the environment of the command's processes:
            those are followed even when they leave the tree (see
            :class:`~greenml.measure.sensors.process_tree.ProcessTree`).
    """

    def __init__(
        self,
        scope: Scope = "machine",
        pid: int | None = None,
        tdp_w: float | None = None,
        cpu_name: str | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        marker: str | None = None,
    ) -> None:
        if scope not in ("process", "machine"):
            raise ConfigError(f"scope must be 'process' or 'machine', got {scope!r}")
        self.scope = scope
        self.tdp = resolve_cpu_tdp(tdp_w, cpu_name)
        self._clock = clock
        self._lock = threading.Lock()
        self._cores = cpu_count_logical()
        self.floor_w = self.tdp.tdp_w * tdp_share(0.0)
        self.dynamic_w_per_cpu = self.tdp.tdp_w * (tdp_share(1.0) - tdp_share(0.0)) / self._cores
        self._tree = ProcessTree(pid, marker) if scope == "process" else None
        self._stat = _ProcStat() if self._tree is None else None
        note = self.tdp.note + "; power = TDP × Teads SPECpower curve of utilization"
        parts: tuple[tuple[str, str], ...] = ()
        if scope == "process":
            note = f"{self.tdp.note}; {_PROCESS_NOTE}"
            parts = (
                (DYNAMIC, f"the process tree's CPU-seconds × {self.dynamic_w_per_cpu:.3g} W "
                 f"per busy CPU (TDP × (102 % − 12 %) ÷ {self._cores} CPUs)"),
                (STATIC, f"idle floor {self.floor_w:.3g} W (12 % of TDP) over the wall-clock "
                 "time: the whole machine's floor, over-attributed when others share it"),
            )  # fmt: skip
        label = self.tdp.cpu_name or "CPU"
        self._device = Device(
            key="cpu0",
            component="cpu",
            name=f"{label} (model, TDP {self.tdp.tdp_w:g} W, {self.tdp.source})",
            method=ESTIMATED,
            uncertainty_rel=self.tdp.uncertainty_rel,
            note=note,
            usage=True,
            parts=parts,
        )
        self._last_u: float | None = None
        self._ref_s = clock()
        self._ref = self._read(strict=True)

    @property
    def devices(self) -> list[Device]:
        return [self._device]

    def _read(self, strict: bool = False) -> Usage:
        """The scope's cumulative counters: (busy, total) seconds, or (tree CPU-seconds,).

        A tree that has exited keeps its final CPU-seconds, unless ``strict``.
        """
        try:
            if self._tree is None:
                assert self._stat is not None
                return self._stat.read()
            try:
                return (self._tree.cpu_seconds(),)
            except SensorError:
                if strict or not self._tree.exited:
                    raise
                return (self._tree.last_cpu_seconds,)
        except psutil.Error as exc:
            raise SensorError(f"cannot read CPU utilization: {exc}") from None

    def read_usage(self) -> dict[str, Usage]:
        """``cpu0``: (busy, total) machine seconds, or (CPU-seconds,) of the process tree."""
        with self._lock:
            return {"cpu0": self._read()}

    def usage_model(self, key: str) -> UsageModel:
        return self._machine_energy if self._tree is None else self._process_energy

    def _machine_energy(self, duration_s: float, start: Usage, end: Usage) -> PartsJ:
        u = self._utilization(duration_s, start, end)
        return (duration_s * self.tdp.tdp_w * tdp_share(u),)

    def _process_energy(self, duration_s: float, start: Usage, end: Usage) -> PartsJ:
        dynamic = max(0.0, end[0] - start[0]) * self.dynamic_w_per_cpu
        static = max(0.0, duration_s) * self.floor_w
        return (dynamic + static, dynamic, static)

    def _utilization(self, duration_s: float, start: Usage, end: Usage) -> float:
        """Busy share of the scope's CPUs between two readings (0–1)."""
        busy = end[0] - start[0]
        total = end[1] - start[1] if self._tree is None else duration_s * self._cores
        return min(max(busy / total, 0.0), 1.0) if total > 0 else 0.0

    def usage_metrics(
        self, key: str, duration_s: float, start: Usage, end: Usage
    ) -> dict[str, float]:
        return {"utilization": self._utilization(duration_s, start, end)}

    def read_power_w(self) -> dict[str, float]:
        """Watts over the interval since the previous call (or construction)."""
        with self._lock:
            now, usage = self._clock(), self._read(strict=True)
            duration = now - self._ref_s
            ticked = self._tree is not None or usage[1] > self._ref[1]  # machine: in ticks
            if ticked and duration > 0:
                self._last_u = self._utilization(duration, self._ref, usage)
                self._ref_s, self._ref = now, usage
            u = self._last_u if self._last_u is not None else 0.0
        if self._tree is None:
            return {"cpu0": self.tdp.tdp_w * tdp_share(u)}
        return {"cpu0": self.floor_w + u * self._cores * self.dynamic_w_per_cpu}

    def read_metrics(self) -> dict[str, dict[str, float]]:
        """``utilization`` (0–1) of the last power read, so no interval is split."""
        if self._last_u is None:
            self.read_power_w()
        return {"cpu0": {"utilization": self._last_u or 0.0}}

    def close(self) -> None:
        if self._stat is not None:
            self._stat.close()


class DramModelSensor(Sensor):
    """DRAM power estimated as watts per GB of memory in use (method ``estimated``).

    Args:
        scope: ``machine`` (memory used system-wide) or ``process`` (resident
            memory of the process tree rooted at ``pid``; pages shared between
            the processes count once per process).
        pid: Root of the process tree; the current process by default.
        watts_per_gb: Power per GiB in use (Green Algorithms: 0.3725 W/GB).
        marker: As for :class:`CpuModelSensor`.
    """

    def __init__(
        self,
        scope: Scope = "machine",
        pid: int | None = None,
        watts_per_gb: float = GREEN_ALGORITHMS_W_PER_GB,
        *,
        marker: str | None = None,
    ) -> None:
        if scope not in ("process", "machine"):
            raise ConfigError(f"scope must be 'process' or 'machine', got {scope!r}")
        self.scope = scope
        self.watts_per_gb = watts_per_gb
        self._tree = ProcessTree(pid, marker) if scope == "process" else None
        self._lock = threading.Lock()
        self._last_bytes: float | None = None
        self._read_at = 0.0
        what = "resident memory of the process tree" if self._tree else "memory used on the machine"
        self._device = Device(
            key="dram0",
            component="dram",
            name=f"DRAM (model, {watts_per_gb:g} W/GB)",
            method=ESTIMATED,
            uncertainty_rel=DRAM_MODEL_UNCERTAINTY,
            note=f"{watts_per_gb:g} W per GB of {what} (Green Algorithms, Lannelongue et al. 2021)",
        )

    @property
    def devices(self) -> list[Device]:
        return [self._device]

    def _used_bytes(self) -> float:
        try:
            if self._tree is None:
                return float(psutil.virtual_memory().used)
            with self._lock:
                procs = self._tree.members()
        except psutil.Error as exc:
            raise SensorError(f"cannot read memory use: {exc}") from None
        rss = 0
        for proc in procs:
            try:
                rss += proc.memory_info().rss
            except psutil.Error:
                continue
        return float(rss)

    def read_power_w(self) -> dict[str, float]:
        # Memory in use moves slowly next to a ±50 % model: read it at most once
        # per MEMORY_READ_S, so sampling at 10 Hz stays cheap.
        now = time.monotonic()
        if self._last_bytes is None or now - self._read_at >= MEMORY_READ_S:
            self._last_bytes = self._used_bytes()
            self._read_at = now
        return {"dram0": self.watts_per_gb * self._last_bytes / _BYTES_PER_GB}

    def read_metrics(self) -> dict[str, dict[str, float]]:
        """``memory_used_bytes`` behind the last power read (read now if none yet)."""
        used = self._last_bytes if self._last_bytes is not None else self._used_bytes()
        return {"dram0": {"memory_used_bytes": used}}

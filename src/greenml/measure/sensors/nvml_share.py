"""A run's share of GPUs it shares with other processes (``greenml run``'s process scope).

The NVML counter covers the whole board. Measuring a process tree (the default
scope of ``greenml run`` and ``greenml.Run``) on a GPU that other processes use
too would charge the run for their work. :class:`ProcessGpuShare` wraps an
:class:`~greenml.measure.sensors.nvml.NvmlSensor` and, per read and per GPU:

- while only the run's processes (or none) are on the GPU, takes the whole
  counter delta, idle included, as before;
- while others are there too, takes the run's share by SM activity
  (:mod:`greenml.measure.gpu_share`: NVML per-process samples), plus the idle
  draw in proportion to that share.

Each GPU's note says the rule; a GPU that was shared during the run is listed
in :attr:`ProcessGpuShare.shared`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from greenml.measure.gpu_share import GpuShare
from greenml.measure.sensors.base import Device, Sensor

SHARE_NOTE = ("process scope: while other processes use this GPU, the run is charged its "
              "share by SM activity (NVML process samples), idle in proportion")  # fmt: skip


class ProcessGpuShare(Sensor):
    """``inner``'s GPUs, each charged to the processes ``pids()`` returns (see the module).

    Args:
        inner: An NvmlSensor (its NVML module and handles are used).
        pids: The run's process ids now.
        clock: Monotonic seconds.
    """

    def __init__(self, inner: Any, pids: Callable[[], set[int]],
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.inner = inner
        self._pids = pids
        self._clock = clock
        nvml = inner._nvml
        self._nvml = nvml
        self._handles = {key: gpu.handle for key, gpu in inner._gpus.items()}
        self._shares = {key: GpuShare(nvml, h) for key, h in self._handles.items()}
        self._last: dict[str, tuple[float, float]] = {}
        self._ours: dict[str, float] = {}
        self._fraction: dict[str, float] = {}
        ours = pids()
        self.shared: set[str] = {k for k in self._handles if self._present(k) - ours}

    @property
    def devices(self) -> list[Device]:
        """The GPUs; one that other processes use at the start says how it is charged."""
        out = []
        for d in self.inner.devices:
            if d.key in self.shared:
                d = dataclasses.replace(d, note=f"{d.note}; {SHARE_NOTE}" if d.note else SHARE_NOTE)
            out.append(d)
        return out

    def read_energy_j(self) -> dict[str, float]:
        """The run's joules per GPU since construction."""
        totals = self.inner.read_energy_j()
        now = self._clock()
        ours = self._pids()
        for key, total in totals.items():
            last_total, last_t = self._last.get(key, (total, now))
            self._last[key] = (total, now)
            delta, dt = max(0.0, total - last_total), max(0.0, now - last_t)
            self._ours[key] = self._ours.get(key, 0.0) + self._charge(key, delta, dt, ours)
        return {key: self._ours.get(key, 0.0) for key in totals}

    def _charge(self, key: str, delta: float, dt: float, ours: set[int]) -> float:
        present = self._present(key)
        split = self._shares[key].split(delta, dt, present)  # keeps the samples current
        if not present - ours:
            self._fraction[key] = 1.0
            return delta
        self.shared.add(key)
        total = sum(split.shares_j.values())
        mine = sum(j for pid, j in split.shares_j.items() if pid in ours)
        fraction = mine / total if total > 0 else len(present & ours) / len(present)
        self._fraction[key] = fraction
        return mine + fraction * split.idle_j

    def _present(self, key: str) -> set[int]:
        nvml = self._nvml
        try:
            processes = nvml.nvmlDeviceGetComputeRunningProcesses(self._handles[key])
        except nvml.NVMLError:
            return set()
        return {int(p.pid) for p in processes}

    def read_power_w(self) -> dict[str, float]:
        """Board power × the run's last share of it."""
        return {k: w * self._fraction.get(k, 1.0) for k, w in self.inner.read_power_w().items()}

    def read_metrics(self) -> dict[str, dict[str, float]]:
        metrics: dict[str, dict[str, float]] = self.inner.read_metrics()
        return metrics

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:  # power limits, SM activity: the board's
        return getattr(self.inner, name)


def share_for_process(sensor: Sensor, pid: int, marker: str | None = None) -> Sensor:
    """``sensor`` charged to the process tree of ``pid`` where it is an NVML sensor."""
    from greenml.errors import SensorUnavailable
    from greenml.measure.sensors.nvml import NvmlSensor
    from greenml.measure.sensors.process_tree import ProcessTree

    if not isinstance(sensor, NvmlSensor):
        return sensor
    try:
        tree = ProcessTree(pid, marker)
    except SensorUnavailable:
        return sensor

    def pids() -> set[int]:
        return {int(p.pid) for p in tree.members()}

    return ProcessGpuShare(sensor, pids)

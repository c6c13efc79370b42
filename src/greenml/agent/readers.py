"""What the agent reads for its clients: RAPL package, DRAM and psys counters, GPU counters.

The devices are those of greenml's own sensors (:class:`RaplSensor`,
:class:`NvmlSensor`) plus the platform (``psys``) zone, which the Meter leaves
out (it contains the package); RAPL files stay open, read with ``pread``.
Totals are joules since the agent started, wraps handled: a background thread
reads every counter at least once a second, so a client that reads rarely still
gets every wrap counted. With ``min_read_interval_s`` answers come from a
reading no older than that (a coarser view of the counters, the PLATYPUS side
channel's mitigation).
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

from greenml.errors import SensorError, SensorUnavailable
from greenml.measure.measurement import COUNTER
from greenml.measure.sensors.base import Sensor
from greenml.measure.sensors.counter import WrappingCounter
from greenml.measure.sensors.nvml import NvmlSensor
from greenml.measure.sensors.rapl import (
    PACKAGE_UNCERTAINTY,
    RaplSensor,
    find_rapl_zones,
    is_amd_cpu,
)

KEEP_UP_S = 1.0
ALL = frozenset({"cpu", "dram", "psys", "gpu"})
_ZONE = re.compile(r"intel-rapl:\d+")


class OpenCounters:
    """RAPL zones read with ``pread`` on files kept open: a sysfs attribute read at offset 0
    is produced afresh, and no ``open``/``close`` is paid per read (half of its cost).

    Args:
        zones: ``(key, zone folder)`` of each zone to read.
    """

    def __init__(self, zones: list[tuple[str, Path]]) -> None:
        self._zones: list[tuple[str, int, WrappingCounter]] = []
        for key, zone in zones:
            try:
                fd = os.open(zone / "energy_uj", os.O_RDONLY | os.O_CLOEXEC)
                raw = int(os.pread(fd, 32, 0))
                top = int((zone / "max_energy_range_uj").read_bytes())
            except (OSError, ValueError):
                continue
            self._zones.append((key, fd, WrappingCounter(raw, top)))

    @property
    def keys(self) -> list[str]:
        return [key for key, _, _ in self._zones]

    def read(self) -> dict[str, float]:
        """Joules since opened, by key (wraps counted; a zone that fails is left out)."""
        out: dict[str, float] = {}
        for key, fd, counter in self._zones:
            try:
                out[key] = counter.update(int(os.pread(fd, 32, 0))) / 1e6
            except (OSError, ValueError):
                continue
        return out

    def close(self) -> None:
        for _, fd, _ in self._zones:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._zones = []


def psys_zones(powercap: Path) -> list[tuple[str, Path]]:
    """The ``psys`` (platform) zones: the whole SoC and what hangs off it, on laptops."""
    try:
        entries = sorted(p for p in powercap.iterdir() if _ZONE.fullmatch(p.name))
    except OSError:
        return []
    found: list[tuple[str, Path]] = []
    for zone in entries:
        with contextlib.suppress(OSError):
            if (zone / "name").read_text().strip() == "psys":
                found.append((f"psys{len(found)}", zone))
    return found


def _device(key: str, component: str, name: str, method: str, rel: float, note: str = "") -> dict[str, Any]:  # noqa: E501
    return {"key": key, "component": component, "name": name, "method": method,
            "uncertainty_rel": rel, "note": note}  # fmt: skip


class NodeReader:
    """The node's counters: RAPL (package, DRAM, psys) under ``sys_root`` and NVML GPUs.

    Args:
        sys_root: Where ``/sys`` is read (``/``, or a test's tree).
        nvml: The NVML module (None: no GPUs are read).
        min_read_interval_s: Serve a reading no older than this instead of reading again.
    """

    def __init__(self, sys_root: Path, nvml: Any | None, min_read_interval_s: float = 0.0) -> None:
        self.notes: list[str] = []
        self._lock = threading.Lock()
        self._min_interval = min_read_interval_s
        self._last: tuple[float, dict[str, float]] = (-1e9, {})
        powercap = sys_root / "sys/class/powercap"
        self._sensors: list[Sensor] = []
        described: list[Sensor] = []  # RAPL's devices, read through self._rapl
        self._rapl = OpenCounters([])
        try:
            described.append(RaplSensor(powercap, amd=is_amd_cpu(sys_root / "proc/cpuinfo")))
            self._rapl = OpenCounters([(k, z) for k, _, _, z in find_rapl_zones(powercap)])
        except SensorUnavailable as exc:
            self.notes.append(f"RAPL: {exc}")
        self._gpu: NvmlSensor | None = None
        if nvml is not None:
            try:
                self._gpu = NvmlSensor(nvml=nvml)
                self._sensors.append(self._gpu)
            except SensorUnavailable as exc:
                self.notes.append(f"GPUs: {exc}")
        self._psys = OpenCounters(psys_zones(powercap))
        self.devices = [
            _device(d.key, d.component, d.name, d.method, d.uncertainty_rel, d.note)
            for s in [*described, *self._sensors] for d in s.devices
            if d.component not in ("cpu", "dram") or d.key in self._rapl.keys
        ] + [_device(k, "psys", "RAPL psys (platform)", COUNTER, PACKAGE_UNCERTAINTY)
             for k in self._psys.keys]  # fmt: skip
        for sensor in described:
            sensor.close()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._keep_up, name="greenml-agent-counters",
                                        daemon=True)  # fmt: skip
        self._thread.start()

    @property
    def gpu_count(self) -> int:
        return sum(1 for d in self.devices if d["component"] == "gpu")

    def energy_j(self, components: frozenset[str] = ALL) -> dict[str, float]:
        """Joules since the agent started, by key (``cpu0``, ``dram0``, ``psys0``, ``gpu0``).

        Only the counters of ``components`` are read (all of them with a read interval).
        """
        with self._lock:
            now = time.monotonic()
            if self._min_interval > 0:
                taken, values = self._last
                if now - taken < self._min_interval:
                    return values
                self._last = (now, self._read(ALL))
                return self._last[1]
            return self._read(components)

    def _read(self, components: frozenset[str]) -> dict[str, float]:
        values: dict[str, float] = {}
        if "cpu" in components or "dram" in components:
            values.update(self._rapl.read())
        if self._gpu is not None and "gpu" in components:
            with contextlib.suppress(SensorError):
                values.update(self._gpu.read_energy_j())
        if "psys" in components:
            values.update(self._psys.read())
        return values

    def power_w(self) -> dict[str, float]:
        """GPU power now, per device key (RAPL power is the client's: energy over time)."""
        if self._gpu is None:
            return {}
        with self._lock:
            try:
                return self._gpu.read_power_w()
            except SensorError:
                return {}

    def _keep_up(self) -> None:
        while not self._stop.wait(KEEP_UP_S):
            with contextlib.suppress(Exception):
                self._read_now()

    def _read_now(self) -> None:
        with self._lock:
            self._read(ALL)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        for sensor in self._sensors:
            sensor.close()
        self._rapl.close()
        self._psys.close()

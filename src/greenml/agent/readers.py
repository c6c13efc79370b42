"""What the agent reads for its clients: RAPL package, DRAM and psys counters, GPU counters.

The counters are read with greenml's own sensors (:class:`RaplSensor`,
:class:`NvmlSensor`) plus the platform (``psys``) zone, which the Meter leaves
out (it contains the package). Totals are joules since the agent started, wraps
handled: a background thread reads every counter at least once a second, so a
client that reads rarely still gets every wrap counted. With
``min_read_interval_s`` answers come from a reading no older than that
(a coarser view of the counters, the PLATYPUS side channel's mitigation).
"""

from __future__ import annotations

import contextlib
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
from greenml.measure.sensors.rapl import PACKAGE_UNCERTAINTY, RaplSensor, is_amd_cpu

KEEP_UP_S = 1.0
_ZONE = re.compile(r"intel-rapl:\d+")


class PsysCounters:
    """The ``psys`` (platform) RAPL zones: the whole SoC and what hangs off it, on laptops."""

    def __init__(self, powercap: Path) -> None:
        self._zones: list[tuple[str, str, WrappingCounter]] = []
        try:
            entries = sorted(p for p in powercap.iterdir() if _ZONE.fullmatch(p.name))
        except OSError:
            entries = []
        for zone in entries:
            try:
                if (zone / "name").read_text().strip() != "psys":
                    continue
                raw = int((zone / "energy_uj").read_bytes())
                top = int((zone / "max_energy_range_uj").read_bytes())
            except (OSError, ValueError):
                continue
            path = str(zone / "energy_uj")
            self._zones.append((f"psys{len(self._zones)}", path, WrappingCounter(raw, top)))

    def devices(self) -> list[dict[str, Any]]:
        return [_device(key, "psys", "RAPL psys (platform)", COUNTER, PACKAGE_UNCERTAINTY)
                for key, _, _ in self._zones]  # fmt: skip

    def read(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for key, path, counter in self._zones:
            try:
                with open(path, "rb") as f:
                    out[key] = counter.update(int(f.read())) / 1e6
            except (OSError, ValueError):
                continue
        return out


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
        try:
            self._sensors.append(RaplSensor(powercap, amd=is_amd_cpu(sys_root / "proc/cpuinfo")))
        except SensorUnavailable as exc:
            self.notes.append(f"RAPL: {exc}")
        self._gpu: NvmlSensor | None = None
        if nvml is not None:
            try:
                self._gpu = NvmlSensor(nvml=nvml)
                self._sensors.append(self._gpu)
            except SensorUnavailable as exc:
                self.notes.append(f"GPUs: {exc}")
        self._psys = PsysCounters(powercap)
        self.devices = [
            _device(d.key, d.component, d.name, d.method, d.uncertainty_rel, d.note)
            for s in self._sensors for d in s.devices
        ] + self._psys.devices()  # fmt: skip
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._keep_up, name="greenml-agent-counters",
                                        daemon=True)  # fmt: skip
        self._thread.start()

    @property
    def gpu_count(self) -> int:
        return sum(1 for d in self.devices if d["component"] == "gpu")

    def energy_j(self) -> dict[str, float]:
        """Joules since the agent started, by key (``cpu0``, ``dram0``, ``psys0``, ``gpu0``)."""
        with self._lock:
            now = time.monotonic()
            taken, values = self._last
            if self._min_interval > 0 and now - taken < self._min_interval:
                return values
            values = {}
            for sensor in self._sensors:
                with contextlib.suppress(SensorError):
                    values.update(sensor.read_energy_j())
            values.update(self._psys.read())
            self._last = (now, values)
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
            for sensor in self._sensors:
                with contextlib.suppress(SensorError):
                    sensor.read_energy_j()
            self._psys.read()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        for sensor in self._sensors:
            sensor.close()

"""What greenml can measure on this machine, what it cannot, why, and how to fix it.

:func:`~greenml.measure.doctor_probes.diagnose_machine` tries every sensor
backend the way a run would open it
(the NVIDIA and AMD GPU libraries, powercap RAPL, the ``amd_energy`` and power
monitor hwmon chips, Apple's IOReport and ``powermetrics``, Jetson's INA3221
rails and ``tegrastats``) and reports each as a :class:`Finding`: usable with
the devices it measures (method and uncertainty of each), or not usable with
the reason (``absent``, ``driver-missing``, ``not-installed``, ``permission``,
``unsupported``) and the command that fixes it. The CPU and DRAM models are
always usable; they are what a run falls back to, labelled.

Every path is taken under :attr:`Machine.root` and every library comes through
:attr:`Machine.modules`, so a test can describe a whole machine with a fake
sysfs tree and fake vendor modules.
"""

from __future__ import annotations

import importlib
import os
import platform
import shutil
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from greenml.errors import SensorUnavailable
from greenml.measure.sensors.base import Device, Sensor

USABLE = "usable"
ABSENT = "absent"
DRIVER_MISSING = "driver-missing"
NOT_INSTALLED = "not-installed"
PERMISSION = "permission"
UNSUPPORTED = "unsupported"

NVIDIA_VENDOR = "0x10de"
AMD_VENDOR = "0x1002"
# PCI class codes of display controllers (0x03xxxx) and processing accelerators (0x12xxxx).
_GPU_CLASSES = ("0x03", "0x12")


@dataclass(frozen=True)
class Machine:
    """Where the doctor looks: a root for every path, and the libraries to use.

    Attributes:
        root: ``/`` on a real machine; a fake tree in tests.
        system: ``sys.platform`` (``linux``, ``darwin``).
        arch: ``platform.machine()`` (``x86_64``, ``arm64``, ``aarch64``).
        is_root: Whether greenml runs as root.
        modules: Library modules by import name (tests inject fakes); others are imported.
        which: Finds a command on ``PATH``.
    """

    root: Path = Path("/")
    system: str = sys.platform
    arch: str = platform.machine()
    is_root: bool = hasattr(os, "geteuid") and os.geteuid() == 0
    modules: dict[str, Any] = field(default_factory=dict)
    which: Callable[[str], str | None] = shutil.which

    def path(self, absolute: str) -> Path:
        """``absolute`` under :attr:`root`."""
        return self.root / absolute.lstrip("/")

    def module(self, name: str) -> Any:
        """The library ``name``: an injected one, else imported (ImportError when missing)."""
        if name in self.modules:
            found = self.modules[name]
            if found is None:
                raise ImportError(f"No module named {name!r}")
            return found
        return importlib.import_module(name)

    def pci_vendors(self) -> set[str]:
        """PCI vendor ids of the GPUs and accelerators on the bus."""
        vendors: set[str] = set()
        base = self.path("/sys/bus/pci/devices")
        try:
            devices = list(base.iterdir())
        except OSError:
            return vendors
        for dev in devices:
            try:
                cls = (dev / "class").read_text().strip()
                vendor = (dev / "vendor").read_text().strip()
            except OSError:
                continue
            if cls.startswith(_GPU_CLASSES):
                vendors.add(vendor.lower())
        return vendors

    def cpu_vendor(self) -> str:
        """``AuthenticAMD``, ``GenuineIntel`` … from /proc/cpuinfo; '' when unknown."""
        try:
            for line in self.path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return ""

    def cpu_flags(self) -> set[str]:
        try:
            for line in self.path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
        except OSError:
            pass
        return set()


@dataclass(frozen=True)
class DeviceReport:
    """A device a usable sensor measures, and how."""

    key: str
    component: str
    name: str
    method: str
    uncertainty_rel: float
    note: str

    @classmethod
    def of(cls, device: Device) -> DeviceReport:
        return cls(device.key, device.component, device.name, device.method,
                   device.uncertainty_rel, device.note)  # fmt: skip


@dataclass(frozen=True)
class Finding:
    """One sensor backend on this machine.

    Attributes:
        sensor: Short id (``nvml``, ``amdsmi``, ``rapl`` …).
        title: What it measures, for people.
        status: ``usable`` or why not: ``absent`` (no such hardware),
            ``driver-missing``, ``not-installed`` (a Python package),
            ``permission``, ``unsupported``.
        reason: The detail behind the status.
        fix: The command that makes it usable; '' when there is nothing to fix.
        devices: What it measures when usable, with method and uncertainty.
    """

    sensor: str
    title: str
    status: str
    reason: str = ""
    fix: str = ""
    devices: tuple[DeviceReport, ...] = ()

    @property
    def usable(self) -> bool:
        return self.status == USABLE

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["usable"] = self.usable
        out["devices"] = [asdict(d) for d in self.devices]
        return out


def usable(sensor: str, title: str, opened: Sensor, reason: str = "") -> Finding:
    """A usable finding listing ``opened``'s devices; the sensor is closed."""
    try:
        devices = tuple(DeviceReport.of(d) for d in opened.devices)
    finally:
        opened.close()
    return Finding(sensor, title, USABLE, reason, "", devices)


def classify(exc: SensorUnavailable) -> str:
    """The status a SensorUnavailable message stands for."""
    text = str(exc).lower()
    if "permission" in text or "denied" in text:
        return PERMISSION
    if "not installed" in text:
        return NOT_INSTALLED
    if "driver" in text:
        return DRIVER_MISSING
    return UNSUPPORTED

"""CPU package and DRAM energy from RAPL counters via Linux powercap.

The kernel's ``intel_rapl`` driver exposes one zone per CPU package under
``/sys/class/powercap/intel-rapl:N`` (name ``package-N``), with subzones
``intel-rapl:N:M`` named ``core``, ``uncore`` or ``dram``. AMD Zen CPUs use
the same driver and names (package and core only, no DRAM). We read:

- ``package-N`` zones → ``cpu0``, ``cpu1`` … (component ``cpu``);
- their ``dram`` subzones → ``dram0`` … (component ``dram``).

``core``/``uncore`` are parts of the package (counting them would count twice),
``psys`` is the whole platform on laptops, and ``intel-rapl-mmio`` repeats the
package counter through MMIO: all are ignored.

``energy_uj`` is a wrapping microjoule counter; a reading below the previous one
means it wrapped and ``max_energy_range_uj + 1`` is added. At the highest
package powers it wraps after tens of seconds to minutes, which is why the
Meter's sampler reads it at least once per second.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from greenml.errors import SensorError, SensorUnavailable
from greenml.measure.measurement import COUNTER
from greenml.measure.sensors.base import Device, Sensor
from greenml.measure.sensors.counter import WrappingCounter

# RAPL's package counter is a model on Sandy/Ivy Bridge and a measurement from
# Haswell on; validated against wall power within a few percent for the package
# (Khan et al., "RAPL in Action: Experiences in Using RAPL for Power
# Measurements", ACM TOMPECS 3(2), 2018; Hackenberg et al., 2015). Its
# DRAM domain deviates more (and is absent on client parts and on AMD), so it
# gets a wider band.
PACKAGE_UNCERTAINTY = 0.10
DRAM_UNCERTAINTY = 0.15
# On AMD Zen the RAPL package figure is the output of a model of the SoC's
# activity, not a measurement, and misses parts of the package (Schöne et al.,
# "Energy Efficiency Aspects of the AMD Zen 2 Architecture", IEEE CLUSTER 2021).
AMD_PACKAGE_UNCERTAINTY = 0.15
AMD_NOTE = "AMD RAPL through powercap: package energy (a model on Zen); AMD has no DRAM domain"

_ZONE_RE = re.compile(r"intel-rapl:(\d+)")
_UJ_PER_J = 1e6


@dataclass
class _Zone:
    key: str
    component: str
    label: str
    energy_path: str
    counter: WrappingCounter  # microjoules, unwrapped


def _read_int(path: str) -> int:
    """Read one integer from a small sysfs file (open, read, close)."""
    with open(path, "rb") as f:
        return int(f.read())


def _read_name(zone: Path) -> str:
    try:
        return (zone / "name").read_text().strip()
    except OSError:
        return ""


def _subdirs(parent: Path, pattern: re.Pattern[str]) -> list[tuple[int, Path]]:
    try:
        entries = list(parent.iterdir())
    except OSError:
        return []
    found = []
    for entry in entries:
        m = pattern.fullmatch(entry.name)
        if m and entry.is_dir():
            found.append((int(m.group(1)), entry))
    return sorted(found)


def find_rapl_zones(root: str | Path) -> list[tuple[str, str, str, Path]]:
    """List the RAPL zones to read under a powercap root.

    Returns:
        ``(key, component, label, zone_dir)`` per zone, packages first in order.
    """
    base = Path(root)
    packages = _subdirs(base, _ZONE_RE)
    if not packages and (base / "intel-rapl").is_dir():  # given the control-type dir's parent
        packages = _subdirs(base / "intel-rapl", _ZONE_RE)
    zones: list[tuple[str, str, str, Path]] = []
    n_cpu = n_dram = 0
    for index, zone in packages:
        name = _read_name(zone)
        if name.startswith("package"):
            zones.append((f"cpu{n_cpu}", "cpu", name, zone))
            n_cpu += 1
            sub_re = re.compile(rf"intel-rapl:{index}:(\d+)")
            for _, sub in _subdirs(zone, sub_re):
                if _read_name(sub) == "dram":
                    zones.append((f"dram{n_dram}", "dram", f"{name} dram", sub))
                    n_dram += 1
        elif name == "dram":  # a top-level DRAM zone (some server platforms)
            zones.append((f"dram{n_dram}", "dram", "dram", zone))
            n_dram += 1
        # psys and anything else: not a CPU package, ignored.
    return zones


def is_amd_cpu(cpuinfo: str | Path = "/proc/cpuinfo") -> bool:
    """Whether /proc/cpuinfo names an AMD CPU (``vendor_id: AuthenticAMD``)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            return any(
                line.startswith("vendor_id") and "AuthenticAMD" in line for line in f
            )
    except OSError:
        return False


def permission_message(root: str | Path) -> str:
    """How to grant read access to the RAPL counters (shown when access is denied)."""
    r = str(root).rstrip("/")
    return (
        f"cannot read RAPL energy counters under {r}: permission denied. Since Linux 5.10 "
        "energy_uj is readable by root only (CVE-2020-8694, the PLATYPUS power side "
        "channel). To grant read access until the next reboot: "
        f"sudo chmod a+r {r}/intel-rapl:*/energy_uj {r}/intel-rapl:*/intel-rapl:*/energy_uj ; "
        'to keep it, add a udev rule (e.g. ACTION=="add", SUBSYSTEM=="powercap", '
        'RUN+="/bin/chmod a+r /sys%p/energy_uj"), or run as root. This lets local users '
        "read the counters again, so do it on machines you trust. Meanwhile greenml falls "
        "back to the CPU model (estimated)."
    )


class RaplSensor(Sensor):
    """CPU package (and DRAM, where exposed) energy counters from Linux powercap.

    Args:
        root: The powercap class directory.
        clock: Monotonic clock in seconds, injectable for tests.
        amd: An AMD CPU: labelled, with a wider uncertainty (see :func:`is_amd_cpu`).

    Raises:
        SensorUnavailable: No RAPL domain under ``root``, or access denied.
    """

    def __init__(
        self,
        root: str | Path = "/sys/class/powercap",
        *,
        clock: Callable[[], float] = time.monotonic,
        amd: bool = False,
    ) -> None:
        self._root = Path(root)
        self._clock = clock
        self._lock = threading.Lock()
        found = find_rapl_zones(self._root)
        if not found:
            raise SensorUnavailable(f"no RAPL domains under {self._root}")
        self._zones: list[_Zone] = []
        skipped: list[str] = []
        for key, component, label, zone in found:
            energy_path = str(zone / "energy_uj")
            try:
                raw = _read_int(energy_path)
                max_range = _read_int(str(zone / "max_energy_range_uj"))
            except PermissionError:
                raise SensorUnavailable(permission_message(self._root)) from None
            except (OSError, ValueError) as exc:
                skipped.append(f"{zone.name}: {exc}")
                continue
            counter = WrappingCounter(raw, max_range)
            self._zones.append(_Zone(key, component, label, energy_path, counter))
        if not self._zones:
            raise SensorUnavailable(
                f"no readable RAPL domains under {self._root} ({'; '.join(skipped)})"
            )
        package = AMD_PACKAGE_UNCERTAINTY if amd else PACKAGE_UNCERTAINTY
        self._devices = [
            Device(
                key=z.key,
                component=z.component,
                name=f"RAPL {z.label}" + (" (AMD)" if amd else ""),
                method=COUNTER,
                uncertainty_rel=package if z.component == "cpu" else DRAM_UNCERTAINTY,
                note=AMD_NOTE if amd else "",
            )
            for z in self._zones
        ]
        t0 = self._clock()
        self._power_ref: dict[str, tuple[float, float]] = {z.key: (t0, 0.0) for z in self._zones}

    @property
    def devices(self) -> list[Device]:
        return list(self._devices)

    def _update(self) -> dict[str, float]:
        """Read every counter, unwrap, return cumulative joules (lock held)."""
        out: dict[str, float] = {}
        for z in self._zones:
            try:
                raw = _read_int(z.energy_path)
            except (OSError, ValueError):
                continue  # a gap for this device; the next good read catches up
            out[z.key] = z.counter.update(raw) / _UJ_PER_J
        if not out:
            raise SensorError(f"no RAPL counter under {self._root} could be read")
        return out

    def read_energy_j(self) -> dict[str, float]:
        """Cumulative joules per device since construction (wrap-around handled)."""
        with self._lock:
            return self._update()

    def read_power_w(self) -> dict[str, float]:
        """Average watts per device since the previous call (or construction)."""
        with self._lock:
            now = self._clock()
            energy = self._update()
            out: dict[str, float] = {}
            for key, joules in energy.items():
                t_prev, j_prev = self._power_ref[key]
                if now > t_prev:
                    out[key] = (joules - j_prev) / (now - t_prev)
                    self._power_ref[key] = (now, joules)
            return out

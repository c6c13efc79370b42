"""Energy and power from Linux hwmon chips: ``amd_energy`` counters and power monitors.

The hwmon sysfs ABI (Documentation/hwmon/sysfs-interface.rst) gives each chip a
directory ``/sys/class/hwmon/hwmonN`` with a ``name`` file and channels:

- ``energyN_input``: cumulative energy in microjoules (``amd_energy``: one
  ``Esocket*`` channel per socket, one ``Ecore*`` per core, per ``energyN_label``);
- ``powerN_input``: instantaneous power in microwatts;
- ``inN_input`` (mV) and ``currN_input`` (mA): voltage and current of a rail, as
  the INA3221 and INA2xx drivers give them (power = V × I, computed here).

:class:`HwmonEnergySensor` reads the ``amd_energy`` socket counters (method
``counter``); :class:`HwmonPowerSensor` reads power channels of any chip and the
Meter integrates them (method ``power-integrated``).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from greenml.errors import SensorError, SensorUnavailable
from greenml.measure.measurement import COUNTER, POWER_INTEGRATED
from greenml.measure.sensors.base import Device, Sensor

HWMON_ROOT = "/sys/class/hwmon"
AMD_ENERGY = "amd_energy"
# amd_energy reads the same RAPL MSRs as powercap on AMD (a model on Zen, see rapl.py).
AMD_ENERGY_UNCERTAINTY = 0.15
# A generic power monitor: the chip's gain error is small (INA2xx/INA3221: ≤0.5 %), but
# the shunt's tolerance and sampling at ~1 Hz of a load that moves faster dominate.
HWMON_POWER_UNCERTAINTY = 0.10
AMD_ENERGY_FIX = (
    "amd_energy left mainline Linux in 5.13: build it from github.com/amd/amd_energy "
    "(make && sudo insmod amd_energy.ko), or use powercap RAPL (sudo modprobe intel_rapl_msr)"
)
_CHANNEL_RE = re.compile(r"(energy|power|in|curr)(\d+)_input")
# Chips whose power is a device greenml reads elsewhere (a GPU, a CPU): not a board rail.
NOT_BOARD_CHIPS = frozenset({AMD_ENERGY, "amdgpu", "nouveau", "i915", "xe", "coretemp", "k10temp"})


def read_text(path: Path) -> str:
    """A small sysfs file's stripped text; '' when it cannot be read."""
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return ""


def hwmon_chips(root: str | Path = HWMON_ROOT) -> list[tuple[str, Path]]:
    """``(name, directory)`` of every hwmon chip under ``root``, in hwmon order."""
    base = Path(root)
    try:
        entries = sorted(base.iterdir(), key=lambda p: _number(p.name))
    except OSError:
        return []
    return [(read_text(e / "name"), e) for e in entries if e.name.startswith("hwmon")]


def _number(name: str) -> int:
    digits = "".join(ch for ch in name if ch.isdigit())
    return int(digits) if digits else -1


def channels(chip: Path, kind: str) -> list[int]:
    """Channel numbers of ``kind`` (``energy``, ``power``, ``in``, ``curr``) on ``chip``."""
    found = []
    try:
        names = [e.name for e in chip.iterdir()]
    except OSError:
        return []
    for name in names:
        m = _CHANNEL_RE.fullmatch(name)
        if m and m.group(1) == kind:
            found.append(int(m.group(2)))
    return sorted(found)


def _read_int(path: Path) -> int:
    with open(path, "rb") as f:
        return int(f.read())


@dataclass
class _Counter:
    key: str
    path: Path
    last_uj: int
    offset_uj: int = 0
    base_uj: int = 0


class HwmonEnergySensor(Sensor):
    """CPU socket energy from the ``amd_energy`` hwmon driver (``Esocket*`` channels).

    The driver widens the 32-bit RAPL MSRs into 64-bit accumulators in the kernel
    (a thread reads them before they can wrap), so ``energyN_input`` only grows;
    a reading below the previous one means the driver was reloaded, and the count
    goes on from there. Core channels are parts of their socket and are skipped.

    Raises:
        SensorUnavailable: No ``amd_energy`` chip, no socket channel, or access denied.
    """

    def __init__(self, root: str | Path = HWMON_ROOT) -> None:
        self._lock = threading.Lock()
        self._counters: list[_Counter] = []
        devices: list[Device] = []
        chips = [path for name, path in hwmon_chips(root) if name == AMD_ENERGY]
        if not chips:
            raise SensorUnavailable(f"no amd_energy hwmon chip under {root}")
        for chip in chips:
            for n in channels(chip, "energy"):
                label = read_text(chip / f"energy{n}_label")
                if not label.lower().startswith("esocket"):
                    continue
                path = chip / f"energy{n}_input"
                try:
                    raw = _read_int(path)
                except PermissionError:
                    raise SensorUnavailable(
                        f"cannot read {path}: permission denied (run as root, or "
                        f"sudo chmod a+r {chip}/energy*_input)"
                    ) from None
                except (OSError, ValueError):
                    continue
                key = f"cpu{len(self._counters)}"
                self._counters.append(_Counter(key, path, raw, base_uj=raw))
                devices.append(
                    Device(
                        key=key,
                        component="cpu",
                        name=f"AMD {label} (amd_energy hwmon)",
                        method=COUNTER,
                        uncertainty_rel=AMD_ENERGY_UNCERTAINTY,
                        note="amd_energy hwmon driver (AMD RAPL MSRs): socket energy; "
                        "no DRAM domain on AMD",
                    )
                )
        if not self._counters:
            raise SensorUnavailable(f"no readable amd_energy socket channel under {root}")
        self._devices = devices

    @property
    def devices(self) -> list[Device]:
        return list(self._devices)

    def read_energy_j(self) -> dict[str, float]:
        out: dict[str, float] = {}
        with self._lock:
            for c in self._counters:
                try:
                    raw = _read_int(c.path)
                except (OSError, ValueError):
                    continue  # a gap; the next good read catches up
                if raw < c.last_uj:  # the driver was reloaded: its count restarted
                    c.offset_uj += c.last_uj
                c.last_uj = raw
                out[c.key] = (c.offset_uj + raw - c.base_uj) / 1e6
        if not out:
            raise SensorError("no amd_energy counter could be read")
        return out

    def read_power_w(self) -> dict[str, float]:
        return {}


@dataclass(frozen=True)
class Rail:
    """One power channel of a hwmon chip.

    Attributes:
        key: Device key (``board0``, ``gpu0`` ...).
        component: What the rail feeds.
        label: The chip's name for it (``VDD_IN``).
        power_path: ``powerN_input`` (µW), or None when power is V × I.
        volt_path: ``inN_input`` (mV) when power is V × I.
        curr_path: ``currN_input`` (mA) when power is V × I.
    """

    key: str
    component: str
    label: str
    power_path: Path | None = None
    volt_path: Path | None = None
    curr_path: Path | None = None

    def read_w(self) -> float:
        if self.power_path is not None:
            return _read_int(self.power_path) / 1e6
        assert self.volt_path is not None and self.curr_path is not None
        return _read_int(self.volt_path) * _read_int(self.curr_path) / 1e6


def power_rails(chip: Path) -> list[tuple[str, Path | None, Path | None, Path | None]]:
    """``(label, power, volt, curr)`` for each rail of ``chip`` that gives power.

    ``powerN_input`` channels come first; otherwise voltage and current channels
    with the same number (INA3221: ``in1``/``curr1`` …) make a rail.
    """
    rails: list[tuple[str, Path | None, Path | None, Path | None]] = []
    for n in channels(chip, "power"):
        label = read_text(chip / f"power{n}_label") or f"{chip.name} power{n}"
        rails.append((label, chip / f"power{n}_input", None, None))
    if rails:
        return rails
    currents = set(channels(chip, "curr"))
    for n in channels(chip, "in"):
        if n not in currents:
            continue
        if read_text(chip / f"in{n}_enable") == "0":
            continue  # a disabled INA3221 channel reads 0 V
        label = read_text(chip / f"in{n}_label") or f"{chip.name} in{n}"
        rails.append((label, None, chip / f"in{n}_input", chip / f"curr{n}_input"))
    return rails


@dataclass
class HwmonPowerSensor(Sensor):
    """Power of hwmon rails, sampled by the Meter and integrated (``power-integrated``).

    Args:
        rails: The rails measured as devices.
        extra: Rails read only as metrics (``rail_<label>_w``), e.g. sub-rails of a
            board whose input rail is already a device (counting both would count twice).
        source: How the rails were found, for names and notes.
        uncertainty_rel: Relative uncertainty of each device.
    """

    rails: Sequence[Rail]
    extra: Sequence[Rail] = ()
    source: str = "hwmon"
    uncertainty_rel: float = HWMON_POWER_UNCERTAINTY
    note: str = ""
    _devices: list[Device] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        if not self.rails:
            raise SensorUnavailable(f"no power rail in {self.source}")
        for rail in self.rails:
            try:
                rail.read_w()
            except PermissionError:
                path = rail.power_path or rail.curr_path
                raise SensorUnavailable(
                    f"cannot read {path}: permission denied (run as root, or "
                    f"sudo chmod a+r {path})"
                ) from None
            except (OSError, ValueError) as exc:
                raise SensorUnavailable(f"cannot read rail {rail.label}: {exc}") from None
        self._devices = [
            Device(
                key=r.key,
                component=r.component,
                name=f"{r.label} ({self.source})",
                method=POWER_INTEGRATED,
                uncertainty_rel=self.uncertainty_rel,
                note=self.note,
            )
            for r in self.rails
        ]

    @property
    def devices(self) -> list[Device]:
        return list(self._devices)

    def read_power_w(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for rail in self.rails:
            try:
                out[rail.key] = rail.read_w()
            except (OSError, ValueError):
                continue  # a gap for this rail
        if not out:
            raise SensorError(f"no rail of {self.source} could be read")
        return out

    def read_metrics(self) -> dict[str, dict[str, float]]:
        if not self.extra or not self.rails:
            return {}
        values: dict[str, float] = {}
        for rail in self.extra:
            try:
                values[f"rail_{rail.label.lower()}_w"] = rail.read_w()
            except (OSError, ValueError):
                continue
        return {self.rails[0].key: values} if values else {}


def generic_power_sensor(root: str | Path = HWMON_ROOT) -> HwmonPowerSensor:
    """Every power channel of every hwmon chip that has one, as ``power0``, ``power1`` ….

    For boards with a power monitor (INA2xx, INA3221 …) and no better interface:
    each rail is a device of component ``board``; what each feeds is not known,
    so they may overlap (a board input rail and its sub-rails). Use
    :func:`~greenml.measure.sensors.jetson.jetson_sensor` on Jetson boards.

    Raises:
        SensorUnavailable: No chip with a power channel under ``root``.
    """
    rails: list[Rail] = []
    for name, chip in hwmon_chips(root):
        if name in NOT_BOARD_CHIPS:
            continue
        for label, power, volt, curr in power_rails(chip):
            key = f"power{len(rails)}"
            rails.append(Rail(key, "board", f"{name} {label}", power, volt, curr))
    return HwmonPowerSensor(
        rails,
        source=f"hwmon power monitor under {root}",
        note="generic hwmon power channels: what each rail feeds is not known; "
        "rails of one board may overlap",
    )

"""NVIDIA Jetson boards: power rails of the on-board INA3221 monitors, or ``tegrastats``.

Where the rails are (NVIDIA Jetson Linux Developer Guide, "Power Management";
Linux Documentation/hwmon/ina3221.rst):

- JetPack 5 and later: the mainline ``ina3221`` hwmon driver, a chip named
  ``ina3221`` under ``/sys/class/hwmon`` with ``inN_label`` (the rail name, e.g.
  ``VDD_IN``), ``inN_input`` (bus voltage, mV) and ``currN_input`` (mA);
- JetPack 4: the ``ina3221x`` IIO driver under ``/sys/bus/i2c/drivers/ina3221x``
  with ``rail_name_N`` and ``in_power N _input`` in milliwatts.

A board whose monitor has its input rail (``VDD_IN``, ``POM_5V_IN``) is measured
as one ``board0`` device from it (the whole module); its other rails are
metrics, since they are parts of the input. Without an input rail, each rail is
a device, its component guessed from its name.

``tegrastats`` (``VDD_IN 5012mW/5012mW`` or, on JetPack 4, ``POM_5V_IN 3392/3392``
pairs of current/average milliwatts) is the fallback when sysfs is not readable.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from greenml.errors import SensorUnavailable
from greenml.measure.measurement import POWER_INTEGRATED
from greenml.measure.sensors.base import Device
from greenml.measure.sensors.hwmon import (
    HwmonPowerSensor,
    Rail,
    hwmon_chips,
    power_rails,
    read_text,
)
from greenml.measure.sensors.stream import Source, StreamPowerSensor, process_records

# TI's INA3221 datasheet gives ≤0.5 % gain error; the module's shunts and sampling
# once a second a load that moves faster dominate: ±5 %.
JETSON_UNCERTAINTY = 0.05
TEGRASTATS_UNCERTAINTY = 0.05
INPUT_RAILS = ("VDD_IN", "POM_5V_IN", "VIN_SYS_5V0", "VDD_SYS_5V0_IN")
TEGRASTATS_COMMAND = ("tegrastats", "--interval", "1000")
_IIO_POWER_RE = re.compile(r"in_power(\d+)_input")
_TEGRA_RE = re.compile(r"\b((?:VDD|POM|VIN)_[A-Z0-9_]+) (\d+)(?:mW)?/(\d+)(?:mW)?")
_MARKERS = ("etc/nv_tegra_release", "sys/bus/i2c/drivers/ina3221x")


def is_jetson(root: str | Path = "/") -> bool:
    """Whether ``root`` is a Jetson board (L4T release file, device tree, or its INA driver)."""
    base = Path(root)
    if any((base / m).exists() for m in _MARKERS):
        return True
    return "jetson" in read_text(base / "proc/device-tree/model").lower()


def component_of(label: str) -> str:
    """What a rail feeds, from its name: ``gpu``, ``cpu``, ``soc``, ``dram`` or ``board``."""
    name = label.upper()
    if "GPU" in name and "CPU" in name:
        return "soc"
    for word, component in (("GPU", "gpu"), ("CPU", "cpu"), ("SOC", "soc"), ("DDR", "dram"),
                            ("VDDQ", "dram"), ("DRAM", "dram")):  # fmt: skip
        if word in name:
            return component
    return "board"


def _rails(root: Path) -> list[tuple[str, Rail]]:
    """``(label, rail)`` of every INA3221 channel of the board (keys assigned later)."""
    found: list[tuple[str, Rail]] = []
    for name, chip in hwmon_chips(root / "sys/class/hwmon"):
        if name != "ina3221":
            continue
        for label, power, volt, curr in power_rails(chip):
            found.append((label, Rail("", "", label, power, volt, curr)))
    if found:
        return found
    iio_root = root / "sys/bus/i2c/drivers/ina3221x"
    for iio in sorted(iio_root.glob("*/iio:device*")) if iio_root.is_dir() else []:
        for entry in sorted(iio.iterdir()):
            m = _IIO_POWER_RE.fullmatch(entry.name)
            if not m:
                continue
            label = read_text(iio / f"rail_name_{m.group(1)}") or f"rail{m.group(1)}"
            # in_powerN_input is in mW; Rail reads µW from power paths, so scale below
            found.append((label, Rail("", "", label, entry)))
    return found


class _MilliwattRail(Rail):
    """A JetPack 4 IIO rail: ``in_powerN_input`` is in milliwatts."""

    def read_w(self) -> float:
        assert self.power_path is not None
        with open(self.power_path, "rb") as f:
            return int(f.read()) / 1000.0


def jetson_sensor(root: str | Path = "/") -> HwmonPowerSensor:
    """The board's INA3221 rails as a sensor (see the module docstring).

    Raises:
        SensorUnavailable: No INA3221 rail, or the rails cannot be read.
    """
    base = Path(root)
    found = _rails(base)
    if not found:
        raise SensorUnavailable(f"no INA3221 rail under {base / 'sys'}")
    iio = any("iio:device" in str(r.power_path or "") for _, r in found)
    rails: list[Rail] = []
    extra: list[Rail] = []
    inputs = [lbl for lbl, _ in found if lbl.upper() in INPUT_RAILS]
    counts: dict[str, int] = {}
    for label, rail in found:
        if inputs and label != inputs[0]:
            component, target = "rail", extra
        else:
            component, target = ("board" if inputs else component_of(label)), rails
        key = f"{component}{counts.get(component, 0)}"
        counts[component] = counts.get(component, 0) + 1
        cls = _MilliwattRail if iio else Rail
        target.append(cls(key, component, label, rail.power_path, rail.volt_path, rail.curr_path))
    note = (
        f"board input rail {inputs[0]}: the whole module; its other rails are metrics"
        if inputs else "no input rail: each INA3221 rail is a device"
    )
    return HwmonPowerSensor(rails, extra, source="Jetson INA3221", note=note,
                            uncertainty_rel=JETSON_UNCERTAINTY)  # fmt: skip


def parse_tegrastats(line: bytes, input_only: bool = True) -> dict[str, float]:
    """Watts from one tegrastats line: ``board0`` from the input rail, else every rail."""
    text = line.decode(errors="replace")
    rails = {name: int(now) / 1000.0 for name, now, _avg in _TEGRA_RE.findall(text)}
    for name in INPUT_RAILS:
        if name in rails:
            return {"board0": rails[name]}
    return {} if input_only else rails


class TegrastatsSensor(StreamPowerSensor):
    """Board power from ``tegrastats`` lines (the input rail), sampled and integrated."""

    def __init__(self, source: Source | str | None = "tegrastats") -> None:
        if source == "tegrastats":
            def start() -> Any:
                return process_records(TEGRASTATS_COMMAND, b"\n")

            source = start
        assert not isinstance(source, str)
        device = Device("board0", "board", "Jetson board input (tegrastats)", POWER_INTEGRATED,
                        TEGRASTATS_UNCERTAINTY, "tegrastats input rail, sampled each second: "
                        "the INA3221 sysfs fallback")  # fmt: skip
        super().__init__([device], parse_tegrastats, source, "tegrastats")

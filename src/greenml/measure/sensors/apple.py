"""Apple Silicon: CPU, GPU, ANE and DRAM energy on macOS.

Preferred: the IOReport "Energy Model" counters, read without root through
``zeus-apple-silicon`` (``AppleEnergyMonitor``; its ``AppleEnergyMetrics`` give
``cpu_total_mj``, ``gpu_mj``, ``ane_mj``, ``dram_mj`` in millijoules, ``None`` for
a field the chip does not report). A window is begun at construction and read
with ``end_window``/``begin_window`` pairs, so the figures are cumulative since
then (method ``counter``).

Fallback: ``powermetrics`` (root), whose ``-f plist`` output is one property list
per sample separated by NUL bytes, with ``processor.cpu_power``, ``gpu_power``,
``ane_power`` in milliwatts and ``elapsed_ns``; the text format prints
``CPU Power: 1234 mW`` lines. Its power is sampled and integrated.

Both are labelled: IOReport's values come from Apple's on-chip energy *model*
(the channel group is named "Energy Model"), not a shunt measurement, hence a
wider band than NVML's.
"""

from __future__ import annotations

import plistlib
import re
import threading
from typing import Any

from greenml.errors import SensorError, SensorUnavailable
from greenml.measure.measurement import COUNTER, POWER_INTEGRATED
from greenml.measure.sensors.base import Device, Sensor
from greenml.measure.sensors.stream import Source, StreamPowerSensor, process_records

# IOReport's Energy Model figures are Apple's on-chip estimates; no accuracy is
# published. ±15 %: wider than a measured counter, narrower than a TDP model.
IOREPORT_UNCERTAINTY = 0.15
POWERMETRICS_UNCERTAINTY = 0.15
WINDOW = "greenml"
# (device key, component, AppleEnergyMetrics field)
_FIELDS = (
    ("cpu0", "cpu", "cpu_total_mj"),
    ("gpu0", "gpu", "gpu_mj"),
    ("ane0", "ane", "ane_mj"),
    ("dram0", "dram", "dram_mj"),
)
POWERMETRICS_COMMAND = (
    "powermetrics", "--samplers", "cpu_power,gpu_power,ane_power", "-i", "1000", "-f", "plist",
)  # fmt: skip
_TEXT_RE = re.compile(rb"^(CPU|GPU|ANE) Power:\s*([0-9.]+)\s*mW", re.MULTILINE)


def import_apple(module: Any | None = None) -> Any:
    if module is not None:
        return module
    try:
        import zeus_apple_silicon  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        raise SensorUnavailable(
            "IOReport unavailable: zeus-apple-silicon is not installed"
        ) from exc
    return zeus_apple_silicon


class AppleSiliconSensor(Sensor):
    """CPU, GPU, ANE and DRAM energy counters of an Apple Silicon SoC (IOReport).

    Args:
        module: A ``zeus_apple_silicon``-compatible module (tests inject a fake).

    Raises:
        SensorUnavailable: Not installed, or IOReport cannot be opened.
    """

    def __init__(self, *, module: Any | None = None) -> None:
        apple = import_apple(module)
        self._lock = threading.Lock()
        try:
            self._monitor = apple.AppleEnergyMonitor()
            self._monitor.begin_window(WINDOW)
            first = self._monitor.end_window(WINDOW)
            self._monitor.begin_window(WINDOW)
        except Exception as exc:  # a C++ extension: anything it raises means "not here"
            raise SensorUnavailable(f"IOReport unavailable: {exc}") from exc
        self._fields = [(k, c, f) for k, c, f in _FIELDS if getattr(first, f, None) is not None]
        if not self._fields:
            raise SensorUnavailable("IOReport reports no energy channel on this Mac")
        self._total_mj = {k: 0.0 for k, _, _ in self._fields}
        note = "IOReport Energy Model counters (Apple's on-chip estimates), read without root"
        self._devices = [
            Device(key, comp, f"Apple Silicon {comp.upper()} (IOReport)", COUNTER,
                   IOREPORT_UNCERTAINTY, note)
            for key, comp, _ in self._fields
        ]

    @property
    def devices(self) -> list[Device]:
        return list(self._devices)

    def read_energy_j(self) -> dict[str, float]:
        """Joules per component since construction."""
        with self._lock:
            try:
                metrics = self._monitor.end_window(WINDOW)
                self._monitor.begin_window(WINDOW)
            except Exception as exc:  # the extension's errors are a gap
                raise SensorError(f"IOReport read failed: {exc}") from None
            out: dict[str, float] = {}
            for key, _, field in self._fields:
                value = getattr(metrics, field, None)
                if value is None or value < 0:
                    continue  # a gap for this component (a counter that went back)
                self._total_mj[key] += float(value)
                out[key] = self._total_mj[key] / 1000.0
            return out

    def read_power_w(self) -> dict[str, float]:
        return {}


def parse_powermetrics(record: bytes) -> dict[str, float]:
    """Watts per device from one powermetrics sample (plist or text format)."""
    body = record.strip(b"\0\n ")
    if body.startswith(b"<?xml") or body.startswith(b"bplist"):
        sample = plistlib.loads(body)
        proc = sample.get("processor", {})
        out: dict[str, float] = {}
        for key, field, section in (
            ("cpu0", "cpu_power", "processor"), ("gpu0", "gpu_power", "gpu"),
            ("ane0", "ane_power", "ane"),
        ):  # fmt: skip
            other = sample.get(section, {})
            value = proc.get(field, other.get(field) if isinstance(other, dict) else None)
            if value is not None:
                out[key] = float(value) / 1000.0
        return out
    return {
        {b"CPU": "cpu0", b"GPU": "gpu0", b"ANE": "ane0"}[name]: float(mw) / 1000.0
        for name, mw in _TEXT_RE.findall(body)
    }


def powermetrics_devices() -> list[Device]:
    note = "powermetrics (root), sampled and integrated: IOReport's fallback"
    return [
        Device(key, comp, f"Apple Silicon {comp.upper()} (powermetrics)", POWER_INTEGRATED,
               POWERMETRICS_UNCERTAINTY, note)
        for key, comp in (("cpu0", "cpu"), ("gpu0", "gpu"), ("ane0", "ane"))
    ]


class PowermetricsSensor(StreamPowerSensor):
    """CPU, GPU and ANE power from ``powermetrics -f plist`` (needs root).

    Args:
        source: The stream of samples; default: start powermetrics (NUL-separated plists).
    """

    def __init__(self, source: Source | str | None = "powermetrics") -> None:
        if source == "powermetrics":
            def start() -> Any:
                return process_records(POWERMETRICS_COMMAND, b"\0")

            source = start
        assert not isinstance(source, str)
        super().__init__(powermetrics_devices(), parse_powermetrics, source, "powermetrics")

"""A scripted sensor for tests and simulation: power traces for N GPUs and a CPU.

Each :class:`FakeDevice` follows a piecewise-linear power trace (time relative
to the sensor's start, watts). Devices with a counter expose the exact integral
of that trace, optionally wrapping like a real register; devices without one
only give power. Failures can be scripted: a device that is "lost" at a time
stops answering, as a GPU that falls off the bus does.

:func:`replay_sensor` builds one from a CSV trace (``time_s,device,power_w``).
"""

from __future__ import annotations

import csv
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from greenml.errors import ConfigError, SensorError
from greenml.measure.measurement import COUNTER, POWER_INTEGRATED, Method
from greenml.measure.sensors.base import Device, Sensor
from greenml.measure.sensors.counter import WrappingCounter
from greenml.measure.timeline import PowerTimeline

Clock = Callable[[], float]


@dataclass
class FakeDevice:
    """A scripted device.

    Attributes:
        key: Device key (``gpu0``, ``cpu0`` ...); the component is its letters.
        trace: ``(time_s, power_w)`` points; power is held after the last one.
        method: How the device is measured (``counter`` exposes energy).
        counter_max_j: Wrap the raw counter at this many joules (``None``: never).
        lost_at_s: From this time on, every read of the device fails.
        metrics: Constant gauges reported by ``read_metrics``.
    """

    key: str
    trace: Sequence[tuple[float, float]]
    name: str = "Fake device"
    method: Method = COUNTER
    uncertainty_rel: float = 0.05
    counter_max_j: float | None = None
    lost_at_s: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def component(self) -> str:
        return self.key.rstrip("0123456789")


class FakeSensor(Sensor):
    """A sensor whose devices follow scripted power traces on a given clock."""

    def __init__(self, devices: Sequence[FakeDevice], clock: Clock = time.monotonic) -> None:
        if not devices:
            raise ConfigError("a fake sensor needs at least one device")
        self._clock = clock
        self._start = clock()
        self._fakes = {d.key: d for d in devices}
        self._traces: dict[str, PowerTimeline] = {}
        for d in devices:
            line = PowerTimeline()
            for t, w in d.trace:
                line.append(t, w)
            self._traces[d.key] = line
        self._counters = {
            d.key: WrappingCounter(0.0, d.counter_max_j)
            for d in devices
            if d.method == COUNTER and d.counter_max_j is not None
        }
        self._devices = [
            Device(d.key, d.component, d.name, d.method, d.uncertainty_rel) for d in devices
        ]
        self._counter_rows = [
            (
                d.key,
                math.inf if d.lost_at_s is None else d.lost_at_s,
                self._traces[d.key],
                self._traces[d.key].energy_at(0.0),
                self._counters.get(d.key),
            )
            for d in devices
            if d.method == COUNTER
        ]
        lost = [d.lost_at_s for d in devices]
        self._all_lost_at = math.inf if None in lost else max(t for t in lost if t is not None)

    @property
    def devices(self) -> list[Device]:
        return self._devices

    def _now(self) -> float:
        return self._clock() - self._start

    def _alive(self, fake: FakeDevice, now: float) -> bool:
        return fake.lost_at_s is None or now < fake.lost_at_s

    def read_energy_j(self) -> dict[str, float]:
        now = self._now_checked()
        out: dict[str, float] = {}
        for key, lost_at, line, energy_at_0, counter in self._counter_rows:
            if now < lost_at:
                energy = line.energy_at(now) - energy_at_0 if now > 0 else 0.0
                out[key] = counter.update(energy % counter.wrap_at) if counter else energy
        return out

    def read_power_w(self) -> dict[str, float]:
        now = self._now_checked()
        out: dict[str, float] = {}
        for key, fake in self._fakes.items():
            if self._alive(fake, now):
                power = self._traces[key].power_at(now)
                out[key] = power if power is not None else 0.0
        return out

    def read_metrics(self) -> dict[str, dict[str, float]]:
        now = self._now()
        return {k: dict(f.metrics) for k, f in self._fakes.items() if self._alive(f, now)}

    def _now_checked(self) -> float:
        now = self._now()
        if now >= self._all_lost_at:
            raise SensorError("every device of this fake sensor is lost")
        return now


def replay_sensor(path: str | Path, clock: Clock = time.monotonic) -> FakeSensor:
    """A fake sensor replaying a CSV trace with columns ``time_s,device,power_w``.

    Devices named ``gpu*`` get an energy counter (the trace's integral);
    ``cpu*`` and ``dram*`` devices are power-integrated.
    """
    traces: dict[str, list[tuple[float, float]]] = {}
    path = Path(path)
    try:
        with path.open(newline="") as handle:
            reader = csv.DictReader(handle)
            for line_no, row in enumerate(reader, start=2):
                try:
                    point = (float(row["time_s"]), float(row["power_w"]))
                    traces.setdefault(row["device"].strip(), []).append(point)
                except (KeyError, TypeError, ValueError) as exc:
                    raise ConfigError(f"{path}:{line_no}: bad trace row ({exc})") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read trace {path}: {exc.strerror}") from exc
    if not traces:
        raise ConfigError(f"{path}: the trace has no rows")
    devices = [
        FakeDevice(
            key=key,
            trace=sorted(points),
            name=f"replay {key}",
            method=COUNTER if key.startswith("gpu") else POWER_INTEGRATED,
        )
        for key, points in sorted(traces.items())
    ]
    return FakeSensor(devices, clock=clock)

"""The Sensor interface every backend implements.

A sensor reports one or more :class:`Device` s. Each device says up front how
its energy will be obtained (``method``) and how uncertain that is, so the
Meter never has to guess:

- a device with a hardware energy counter returns cumulative joules from
  :meth:`Sensor.read_energy_j` (monotonic, wrap-around already handled);
- a device whose energy is a model of cumulative usage counters (the CPU model
  over CPU-seconds) says ``usage=True``: it returns those counters from
  :meth:`Sensor.read_usage`, and :meth:`Sensor.usage_model` turns two readings
  into joules, so a window's figure is exact for its own utilization;
- every device may return instantaneous watts from :meth:`Sensor.read_power_w`;
  the Meter's sampler integrates them for devices without a counter and keeps
  them as the power timeline of the others.

The Meter reads counters, usage and the power of sampled devices at every
window's start and end, so those reads must be cheap.

A read either returns values for the devices it could read (a device missing
from the result is a gap for that device) or raises :class:`SensorError` for
all of them. Sensors never raise anything else from a read.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from greenml.errors import SensorError
from greenml.measure.measurement import COUNTER, Method
from greenml.measure.timeline import Usage, UsageModel


@dataclass(frozen=True)
class Device:
    """One measurable device and how it is measured.

    Attributes:
        key: Unique within a Meter, e.g. ``gpu0``, ``cpu0``, ``dram0``.
        component: ``gpu``, ``cpu`` or ``dram``.
        name: Human name, e.g. ``NVIDIA H100 80GB HBM3``.
        method: ``counter``, ``power-integrated`` or ``estimated``.
        uncertainty_rel: Relative uncertainty of the method (0.05 = ±5 %).
        note: Why this method was chosen when it is not the best one
            (a fallback is always labelled here).
        usage: Energy comes from :meth:`Sensor.read_usage` and :meth:`Sensor.usage_model`.
        parts: ``(name, label)`` of the parts the usage model splits its energy
            into, after the total (e.g. ``dynamic`` and ``static``).
        counter_period_s: How often the energy counter moves (NVIDIA: ~0.1 s); a window
            shorter than about ten updates carries its steps as uncertainty.
    """

    key: str
    component: str
    name: str
    method: Method
    uncertainty_rel: float
    note: str = ""
    usage: bool = False
    parts: tuple[tuple[str, str], ...] = ()
    counter_period_s: float | None = None

    @property
    def has_counter(self) -> bool:
        return self.method == COUNTER


class Sensor(ABC):
    """A source of energy and power readings for a set of devices."""

    @property
    @abstractmethod
    def devices(self) -> list[Device]:
        """The devices this sensor measures, fixed for its lifetime."""

    def read_energy_j(self) -> dict[str, float]:
        """Cumulative energy in joules for the devices with a counter.

        Must be cheap: the Meter calls it at every window boundary.
        """
        return {}

    @abstractmethod
    def read_power_w(self) -> dict[str, float]:
        """Instantaneous (or recent average) power in watts per device."""

    def read_usage(self) -> dict[str, Usage]:
        """Cumulative usage counters (e.g. CPU-seconds) of the devices with ``usage``.

        Must be cheap: the Meter calls it at every window boundary.
        """
        return {}

    def usage_model(self, key: str) -> UsageModel:
        """``(duration_s, start, end)`` → ``(total, *parts)`` joules between two usage readings.

        A sensor that declares a device with ``usage`` provides this; the base has none.

        Raises:
            SensorError: This sensor has no usage model (a backend that declares
                ``usage`` devices without one).
        """
        raise SensorError(f"{type(self).__name__} declares usage for {key} but has no usage model")

    def usage_metrics(
        self, key: str, duration_s: float, start: Usage, end: Usage
    ) -> dict[str, float]:
        """Gauges (``utilization``) over the piece between two usage readings."""
        return {}

    def read_metrics(self) -> dict[str, dict[str, float]]:
        """Other per-device gauges (utilization, memory, clocks), by device key.

        Values use units in their names: ``utilization`` (0–1),
        ``sm_activity`` (0–1), ``memory_used_bytes``, ``sm_clock_mhz``, ...
        """
        return {}

    def close(self) -> None:  # noqa: B027 - optional hook: most sensors hold nothing
        """Release handles; the sensor is not used afterwards."""

"""The Sensor interface every backend implements.

A sensor reports one or more :class:`Device` s. Each device says up front how
its energy will be obtained (``method``) and how uncertain that is, so the
Meter never has to guess:

- a device with a hardware energy counter returns cumulative joules from
  :meth:`Sensor.read_energy_j` (monotonic, wrap-around already handled);
- every device may return instantaneous watts from :meth:`Sensor.read_power_w`;
  the Meter's sampler integrates them for devices without a counter and keeps
  them as the power timeline of the others.

A read either returns values for the devices it could read (a device missing
from the result is a gap for that device) or raises :class:`SensorError` for
all of them. Sensors never raise anything else from a read.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from greenml.measure.measurement import COUNTER, Method


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
    """

    key: str
    component: str
    name: str
    method: Method
    uncertainty_rel: float
    note: str = ""

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

    def read_metrics(self) -> dict[str, dict[str, float]]:
        """Other per-device gauges (utilization, memory, clocks), by device key.

        Values use units in their names: ``utilization`` (0–1),
        ``sm_activity`` (0–1), ``memory_used_bytes``, ``sm_clock_mhz``, ...
        """
        return {}

    def close(self) -> None:  # noqa: B027 - optional hook: most sensors hold nothing
        """Release handles; the sensor is not used afterwards."""

"""What a window measured: energy per component and device, with provenance.

Units are joules and seconds. Every device figure says how it was obtained:

- ``counter``: the difference of a hardware energy counter (NVML, RAPL);
- ``power-integrated``: sampled power integrated over time (trapezoid rule);
- ``estimated``: a model (utilization × TDP curve, W per GB of memory, ...).

A device may also split its energy into labelled ``parts``: the process-scope
CPU model gives the ``dynamic`` energy the work's CPU-seconds caused and the
``static`` share of the machine's idle floor over the wall-clock time. Records
stored before parts existed simply have none.

Uncertainties are relative (0.05 means ±5 %). Devices of one component share a
sensor type, so their errors are taken as fully correlated (absolute errors add);
components come from independent sensors, so the total combines them in
quadrature (root of the sum of squares).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

from greenml.quantities import J_PER_KWH as JOULES_PER_KWH

Method = Literal["counter", "power-integrated", "estimated"]
COUNTER: Method = "counter"
POWER_INTEGRATED: Method = "power-integrated"
ESTIMATED: Method = "estimated"

# From most to least direct; a mix of methods is labelled by the weakest one.
_METHOD_RANK: dict[str, int] = {COUNTER: 0, POWER_INTEGRATED: 1, ESTIMATED: 2}


DYNAMIC = "dynamic"
"""Part name: energy the work itself caused (the CPU model: from its CPU-seconds)."""
STATIC = "static"
"""Part name: the work's share of the idle floor, charged over the wall-clock time."""
NODE = "node"
"""Component of a node meter (the whole machine at its plug or PSU, :mod:`greenml.measure.node`):
ground truth beside the components, never added to them (kept in :attr:`Measurement.node`)."""


def weakest_method(methods: list[str]) -> str:
    """The least direct of several methods (``estimated`` beats ``counter``)."""
    return max(methods, key=lambda m: _METHOD_RANK.get(m, 3))


@dataclass(slots=True)
class EnergyPart:
    """A labelled part of a device's energy (see :data:`DYNAMIC`, :data:`STATIC`)."""

    energy_j: float
    label: str

    def to_dict(self) -> dict[str, Any]:
        return {"energy_j": self.energy_j, "label": self.label}


@dataclass(slots=True)
class DeviceEnergy:
    """Energy of one device (a GPU, a CPU package, a DRAM domain) in a window.

    Treat as read-only. Not frozen: a frozen dataclass costs 4× more to create,
    and the Meter creates one per device at every window end.

    ``parts``, when given, split ``energy_j`` into labelled parts that add up to it.
    """

    energy_j: float
    method: str
    uncertainty_rel: float
    name: str = ""
    note: str = ""
    parts: dict[str, EnergyPart] | None = None

    def part_j(self, name: str) -> float | None:
        """Joules of one part, ``None`` when the device does not split its energy so."""
        part = self.parts.get(name) if self.parts else None
        return part.energy_j if part is not None else None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "energy_j": self.energy_j,
            "method": self.method,
            "uncertainty_rel": self.uncertainty_rel,
            "name": self.name,
        }
        if self.note:
            out["note"] = self.note
        if self.parts:
            out["parts"] = {name: part.to_dict() for name, part in self.parts.items()}
        return out


@dataclass(slots=True)
class ComponentEnergy:
    """Energy of one component kind (``gpu``, ``cpu``, ``dram``), summed over devices."""

    devices: dict[str, DeviceEnergy]

    @property
    def energy_j(self) -> float:
        return sum(d.energy_j for d in self.devices.values())

    @property
    def method(self) -> str:
        return weakest_method([d.method for d in self.devices.values()])

    @property
    def uncertainty_j(self) -> float:
        # Same sensor type on every device: errors are correlated, so they add.
        return sum(d.energy_j * d.uncertainty_rel for d in self.devices.values())

    @property
    def uncertainty_rel(self) -> float:
        total = self.energy_j
        if total > 0:
            return self.uncertainty_j / total
        return max((d.uncertainty_rel for d in self.devices.values()), default=0.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "energy_j": self.energy_j,
            "method": self.method,
            "uncertainty_rel": self.uncertainty_rel,
            "devices": {key: d.to_dict() for key, d in self.devices.items()},
        }


Figures = Callable[[Any], tuple[datetime, dict[str, "ComponentEnergy"], "ComponentEnergy | None"]]
"""Derives ``started_at``, ``components`` and ``node`` from what a window read."""


_DERIVED = frozenset(("started_at", "components", "node"))


class _Deferrable:
    """Holds ``(figures, reading)`` of a Measurement whose figures are not derived yet."""

    __slots__ = ("_figures",)
    _figures: tuple[Figures, Any]


@dataclass(slots=True)
class Measurement(_Deferrable):
    """The result of one named window: duration and energy per component (read-only).

    ``node``, when a node meter is configured, is the whole machine's energy in the
    same window: a check on the components, not one of them (not in :attr:`total_j`).

    A Meter's window derives ``started_at``, ``components`` and ``node`` from its raw
    readings when one of them is first read (see :func:`deferred`): the same values,
    later, so that closing a window costs little more than reading the sensors.
    """

    name: str
    started_at: datetime
    duration_s: float
    components: dict[str, ComponentEnergy] = field(default_factory=dict)
    node: ComponentEnergy | None = None

    if not TYPE_CHECKING:  # hidden from the type checker: attribute typos stay errors

        def __getattr__(self, name: str) -> Any:
            """Only reached for a field not set yet: derive the deferred ones once."""
            if name not in _DERIVED:
                raise AttributeError(name)
            try:
                figures, reading = self._figures
            except AttributeError:  # another thread derived them meanwhile, or none deferred
                return object.__getattribute__(self, name)
            self.started_at, self.components, self.node = figures(reading)
            with contextlib.suppress(AttributeError):  # another thread got there first
                del self._figures  # its readings are no longer needed
            return object.__getattribute__(self, name)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled and copied with its figures derived (never the readings behind them)."""
        return (type(self), (self.name, self.started_at, self.duration_s, self.components,
                             self.node))  # fmt: skip

    @property
    def total_j(self) -> float:
        return sum(c.energy_j for c in self.components.values())

    @property
    def total_kwh(self) -> float:
        return self.total_j / JOULES_PER_KWH

    @property
    def uncertainty_rel(self) -> float:
        """Relative uncertainty of the total (components independent: quadrature)."""
        total = self.total_j
        if total <= 0:
            return max((c.uncertainty_rel for c in self.components.values()), default=0.0)
        return math.sqrt(sum(c.uncertainty_j**2 for c in self.components.values())) / total

    @property
    def average_power_w(self) -> float:
        return self.total_j / self.duration_s if self.duration_s > 0 else 0.0

    def energy_of(self, component: str) -> float:
        """Joules of one component, 0.0 when it was not measured."""
        comp = self.components.get(component)
        return comp.energy_j if comp else 0.0

    def part_j(self, name: str) -> float | None:
        """Joules of one part summed over the devices that report it; ``None`` if none does."""
        found = [
            j
            for c in self.components.values()
            for d in c.devices.values()
            if (j := d.part_j(name)) is not None
        ]
        return sum(found) if found else None

    @classmethod
    def from_dict(
        cls, name: str, started_at: datetime, duration_s: float, block: dict[str, Any]
    ) -> Measurement:
        """Rebuild a Measurement from the ``energy`` block :meth:`to_dict` wrote."""
        components = {
            comp: ComponentEnergy({key: _device_from_dict(d) for key, d in c["devices"].items()})
            for comp, c in block.get("components", {}).items()
        }
        return cls(name, started_at, duration_s, components)

    def to_dict(self) -> dict[str, Any]:
        """The ``energy`` block of a run record (:meth:`from_dict` reads it back)."""
        return {
            "total_j": self.total_j,
            "total_kwh": self.total_kwh,
            "uncertainty_rel": self.uncertainty_rel,
            "components": {name: c.to_dict() for name, c in self.components.items()},
        }

    def _repr_html_(self) -> str:
        from greenml.measure.html import measurement_html  # lazy: notebooks only

        return measurement_html(self)

    def to_window_dict(self) -> dict[str, Any]:
        """The whole window as JSON: name, start (Unix s), duration and the energy block.

        The one serialized form of a window, written to the spool and split
        into the store's ``windows`` columns; :meth:`from_window_dict` reads it.
        """
        return {
            "name": self.name,
            "started_at": self.started_at.timestamp(),
            "duration_s": self.duration_s,
            "energy": self.to_dict(),
        }

    @classmethod
    def from_window_dict(cls, data: dict[str, Any]) -> Measurement:
        """Rebuild a Measurement from :meth:`to_window_dict`."""
        started = datetime.fromtimestamp(float(data["started_at"]), tz=timezone.utc)
        return cls.from_dict(str(data["name"]), started, float(data["duration_s"]), data["energy"])


def deferred(name: str, duration_s: float, figures: Figures, reading: Any) -> Measurement:
    """A Measurement whose ``started_at``, ``components`` and ``node`` are
    ``figures(reading)``, called when one of them is first read (then kept); equal in
    every respect to one built with them."""
    m = object.__new__(Measurement)
    m.name = name
    m.duration_s = duration_s
    object.__setattr__(m, "_figures", (figures, reading))  # the base's slot
    return m


def _device_from_dict(d: dict[str, Any]) -> DeviceEnergy:
    parts = d.get("parts")  # absent in records stored before parts existed
    return DeviceEnergy(
        float(d["energy_j"]),
        str(d["method"]),
        float(d["uncertainty_rel"]),
        str(d.get("name", "")),
        str(d.get("note", "")),
        {
            name: EnergyPart(float(p["energy_j"]), str(p.get("label", "")))
            for name, p in parts.items()
        }
        if isinstance(parts, dict) and parts
        else None,
    )


@dataclass(frozen=True)
class Sample:
    """One reading of one device by the Meter's sampler.

    Attributes:
        device: Device key (``gpu0``, ``cpu0`` ...).
        component: ``gpu``, ``cpu`` or ``dram``.
        time_s: Unix time in seconds (UTC) of the reading.
        power_w: Power in watts, ``None`` when only metrics were read.
        metrics: Other gauges with units in their names (``utilization``,
            ``sm_activity``, ``memory_used_bytes``, ``sm_clock_mhz`` ...).
    """

    device: str
    component: str
    time_s: float
    power_w: float | None
    metrics: dict[str, float] = field(default_factory=dict)

"""A run's samples as numpy arrays, split by device, with interval energies.

Energy is integrated per device with the trapezoid rule. Each interval between
two consecutive samples of a device is classified by the activity of its first
sample, so "energy while idle" is the energy of intervals that start idle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from greenml.errors import ConfigError

if TYPE_CHECKING:
    from greenml.store.repository import Store

Array = npt.NDArray[np.float64]


@dataclass
class DeviceSeries:
    """The samples of one device, in time order.

    Attributes:
        device: Device key (``gpu0``, ``cpu0`` ...).
        component: ``gpu``, ``cpu`` or ``dram``.
        time_s, power_w, utilization, sm_activity, memory_used_bytes: Columns
            (``nan`` where not read).
    """

    device: str
    component: str
    time_s: Array
    power_w: Array
    utilization: Array
    sm_activity: Array
    memory_used_bytes: Array

    @property
    def duration_s(self) -> float:
        return float(self.time_s[-1] - self.time_s[0]) if self.time_s.size > 1 else 0.0

    def activity(self) -> tuple[Array, str] | None:
        """The best activity gauge: ``sm_activity`` if read, else ``utilization``, else None."""
        for name in ("sm_activity", "utilization"):
            values: Array = getattr(self, name)
            if values.size and not np.isnan(values).all():
                return values, name
        return None

    def interval_energy_j(self) -> Array:
        """Energy of each interval between consecutive samples (0 where power is missing)."""
        dt = np.diff(self.time_s)
        mean_w = (self.power_w[:-1] + self.power_w[1:]) / 2.0
        return np.nan_to_num(mean_w * dt, nan=0.0)

    def interval_s(self) -> Array:
        """Length of each interval between consecutive samples."""
        return np.diff(self.time_s)

    def energy_j(self) -> float:
        return float(self.interval_energy_j().sum())

    def peak_memory_bytes(self) -> float | None:
        mem = self.memory_used_bytes
        return None if not mem.size or np.isnan(mem).all() else float(np.nanmax(mem))


@dataclass
class Timeline:
    """All devices of one run."""

    run_id: str
    devices: list[DeviceSeries]

    def of(self, component: str) -> list[DeviceSeries]:
        return [d for d in self.devices if d.component == component]

    @property
    def start_s(self) -> float:
        return min(float(d.time_s[0]) for d in self.devices)

    @property
    def end_s(self) -> float:
        return max(float(d.time_s[-1]) for d in self.devices)


def from_columns(run_id: str, cols: dict[str, Any]) -> Timeline:
    """Split ``Store.sample_columns`` output by device (a stable sort by device code)."""
    codes: npt.NDArray[np.int32] = cols["device"]
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    bounds = np.searchsorted(sorted_codes, np.arange(len(cols["devices"]) + 1))
    comp_codes = cols["component"]
    out: list[DeviceSeries] = []
    for code, device in enumerate(cols["devices"]):
        idx = order[bounds[code] : bounds[code + 1]]
        if idx.size < 2:
            continue
        out.append(
            DeviceSeries(
                device=device,
                component=cols["components"][int(comp_codes[idx[0]])],
                time_s=cols["time_s"][idx],
                power_w=cols["power_w"][idx],
                utilization=cols["utilization"][idx],
                sm_activity=cols["sm_activity"][idx],
                memory_used_bytes=cols["memory_used_bytes"][idx],
            )
        )
    out.sort(key=lambda d: (d.component, len(d.device), d.device))
    return Timeline(run_id, out)


def load_timeline(store: Store, run_id: str) -> Timeline:
    """The run's samples split by device.

    Raises:
        ConfigError: The run has no samples (no power timeline to diagnose).
    """
    timeline = from_columns(run_id, store.sample_columns(run_id))
    if not timeline.devices:
        raise ConfigError(
            f"run {run_id} has no power timeline: diagnose needs the samples the Meter "
            "stores while a run is measured (record it with `greenml run` or greenml.Meter)"
        )
    return timeline

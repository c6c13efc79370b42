"""The latest state of a Meter's devices, refreshed by one loop and read for free.

:class:`LiveState` turns a Meter into a cheap-to-read :class:`Snapshot`:
``update()`` (called by the sampling loop) drains the Meter's recorded samples,
peeks its energy window and accrues emissions and cost; readers (a Prometheus
scrape, a terminal frame) only take the latest snapshot, never a sensor.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from greenml.accounting.intensity import IntensitySource
from greenml.measure.measurement import Measurement
from greenml.measure.meter import Meter
from greenml.quantities import J_PER_KWH

log = logging.getLogger("greenml")

WINDOW = "greenml-live"


@dataclass(frozen=True, slots=True)
class DeviceState:
    """One device at the last update. Gauges a sensor does not report are ``None``."""

    key: str
    component: str
    name: str
    power_w: float | None
    energy_j: float
    utilization: float | None = None
    sm_activity: float | None = None
    memory_used_bytes: float | None = None
    emissions_g: float | None = None
    cost_usd: float | None = None
    method: str = ""  # counter, power-integrated or estimated


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Every device, the grid intensity and totals at one instant (Unix seconds)."""

    time_s: float
    duration_s: float
    devices: tuple[DeviceState, ...] = ()
    intensity_g_per_kwh: float | None = None
    intensity_source: str = ""
    intensity_location: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)


class LiveState:
    """Keeps the latest :class:`Snapshot` of a Meter (opened with ``record_samples=True``).

    Args:
        meter: The Meter to read; this object opens one window on it.
        intensity: Grid intensity source for emissions; ``None``: no emissions.
        price_usd_per_kwh: Electricity price for cost; ``None``: no cost.
        intensity_refresh_s: How often to ask the intensity source again.
    """

    def __init__(
        self,
        meter: Meter,
        intensity: IntensitySource | None = None,
        price_usd_per_kwh: float | None = None,
        *,
        intensity_refresh_s: float = 300.0,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.meter = meter
        self._intensity = intensity
        self._price = price_usd_per_kwh
        self._refresh_s = intensity_refresh_s
        self._wall = wall_clock
        self._lock = threading.Lock()
        self._ci: float | None = None
        self._ci_source = ("", "")
        self._ci_at = -float("inf")
        self._energy: dict[str, float] = {}
        self._emissions: dict[str, float] = {}
        self._cost: dict[str, float] = {}
        self._latest: dict[str, tuple[float | None, dict[str, float]]] = {}
        self._notes: list[str] = []
        self._pending: tuple[float, Measurement] | None = None  # the latest tick, not built yet
        meter.begin_window(WINDOW, sync_execution=False)
        self._snapshot = Snapshot(self._wall(), 0.0)
        self.update()

    @property
    def snapshot(self) -> Snapshot:
        """The latest snapshot (no sensor is read; built from the latest tick if need be)."""
        if self._pending is not None:
            with self._lock:
                self._build()
        return self._snapshot

    def update(self) -> Snapshot:
        """Fold in what the Meter recorded since the last call; return the new snapshot."""
        with self._lock:
            self._tick()
            return self._build()

    def tick(self) -> None:
        """Read the Meter now (its samples, its window); the snapshot is built when read."""
        with self._lock:
            self._tick()

    def _tick(self) -> None:
        for sample in self.meter.drain_samples():
            self._latest[sample.device] = (sample.power_w, sample.metrics)
        measurement = self.meter.peek_window(WINDOW)
        now = self._wall()
        if self._intensity is not None and now - self._ci_at >= self._refresh_s:
            self._build(refresh=False)  # the energy so far, at the intensity it was used at
            self._pending = (now, measurement)
            self._build()  # refreshes the intensity
        else:
            self._pending = (now, measurement)

    def _build(self, refresh: bool = True) -> Snapshot:
        """The snapshot of the latest tick, its emissions and cost accrued (under the lock)."""
        if self._pending is None:
            return self._snapshot
        now, measurement = self._pending
        self._pending = None
        ci = self._current_intensity(now) if refresh else self._ci
        devices = []
        for component, energies in measurement.components.items():
            for key, energy in energies.devices.items():
                devices.append(
                    self._device(key, component, energy.name, energy.energy_j, ci, energy.method)
                )
        devices.sort(key=lambda d: (d.component != "gpu", _order(d.key)))
        self._snapshot = Snapshot(
            now,
            measurement.duration_s,
            tuple(devices),
            ci,
            *self._ci_source,
            notes=tuple(self._notes),
        )
        return self._snapshot

    def _device(
        self,
        key: str,
        component: str,
        name: str,
        energy_j: float,
        ci: float | None,
        method: str = "",
    ) -> DeviceState:
        delta = max(0.0, energy_j - self._energy.get(key, 0.0))
        self._energy[key] = energy_j
        emissions = cost = None
        if ci is not None:
            emissions = self._emissions.get(key, 0.0) + delta / J_PER_KWH * ci
            self._emissions[key] = emissions
        if self._price is not None:
            cost = self._cost.get(key, 0.0) + delta / J_PER_KWH * self._price
            self._cost[key] = cost
        power, metrics = self._latest.get(key, (None, {}))
        return DeviceState(
            key,
            component,
            name,
            power,
            energy_j,
            metrics.get("utilization"),
            metrics.get("sm_activity"),
            metrics.get("memory_used_bytes"),
            emissions,
            cost,
            method,
        )

    def _current_intensity(self, now: float) -> float | None:
        if self._intensity is None or now - self._ci_at < self._refresh_s:
            return self._ci
        self._ci_at = now
        try:
            grid = self._intensity.intensity(now, now + 1.0)
            self._ci = grid.series.value_at(now)
            self._ci_source = (grid.provenance.source, grid.provenance.location)
        except Exception as exc:  # a source that cannot answer: no emissions, said once
            note = f"carbon intensity unavailable: {exc}"
            if note not in self._notes:
                self._notes.append(note)
                log.warning("greenml: %s", note)
            self._ci = None
        return self._ci


def _order(key: str) -> tuple[str, int]:
    head = key.rstrip("0123456789")
    tail = key[len(head) :]
    return head, int(tail) if tail else -1

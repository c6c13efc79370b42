"""Energy counters too slow to read at every window edge, read by the sampler instead.

On an H100 behind driver 580 one ``nvmlDeviceGetTotalEnergyConsumption`` call took
4.7 ms (benchmarks/gpu/meter_vs_counter.py, docs/validation.md), while the counter
itself only moves every ~100 ms. A window edge that read it synchronously cost a
training loop 34 % of a 20 ms step, and bought no precision: the value read is up to
one update period old anyway.

So a counter whose read costs more than :data:`SLOW_READ_S` is read by a thread of
its own once per counter update (:data:`COUNTER_UPDATE_S`), and a window edge takes
the newest reading extended to the edge's time at the rate of the last two readings
(no device call on the caller's thread; the driver call releases the GIL). Edges
stay one value each and never go backwards, so consecutive windows
still add up to the counter over their span and no window is negative. What this
costs in accuracy is stated per window by :func:`edge_uncertainty_rel`.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence

from greenml.measure.sensors.base import Sensor

SLOW_READ_S = 0.0005
"""A counter read slower than this (0.5 ms) is left to the sampler."""

COUNTER_UPDATE_S = 0.1
"""How often an NVIDIA energy counter moves (measured on an H100: median 100.2 ms)."""

_Reading = tuple[float, float]  # (monotonic time, joules)

log = logging.getLogger(__name__)


class SlowCounters:
    """The slow counter sensors of a Meter, their newest readings, and edges from them."""

    def __init__(self, sensors: Sequence[Sensor], read_cost_s: dict[int, float]) -> None:
        self.sensors = list(sensors)
        self.read_cost_s = read_cost_s
        self._last: dict[str, tuple[_Reading, _Reading | None]] = {}
        self._edges: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.failures: list[str] = []

    def start(self, clock: Callable[[], float]) -> None:
        """Read every slow counter once per counter update, in a daemon thread."""

        def loop() -> None:
            while not self._stop.wait(COUNTER_UPDATE_S):
                for sensor in self.sensors:
                    try:
                        self.refresh(sensor, clock())
                    except Exception as exc:  # never dies loudly; the gap shows as a stale edge
                        if not self.failures:
                            log.warning("greenml: slow counter read failed: %s", exc)
                        self.failures.append(repr(exc))

        self._thread = threading.Thread(target=loop, name="greenml-slow-counters", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the reading thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None

    @classmethod
    def detect(
        cls, sensors: Sequence[Sensor], clock: Callable[[], float] = time.monotonic
    ) -> SlowCounters | None:
        """Time one read of each counter sensor; ``None`` when every one is fast."""
        slow: list[Sensor] = []
        cost: dict[int, float] = {}
        for sensor in sensors:
            spent = math.inf
            for _ in range(3):  # the fastest of three: a loaded machine delays single reads
                started = time.perf_counter()
                try:
                    sensor.read_energy_j()
                except Exception:
                    break  # the Meter's own reads report the failure
                spent = min(spent, time.perf_counter() - started)
                if spent <= SLOW_READ_S:
                    break
            if math.isfinite(spent) and spent > SLOW_READ_S:
                slow.append(sensor)
                cost[id(sensor)] = spent
        if not slow:
            return None
        found = cls(slow, cost)
        for sensor in slow:
            found.refresh(sensor, clock())
        return found

    def keys(self) -> set[str]:
        """The device keys whose counters are read here."""
        return {d.key for s in self.sensors for d in s.devices if d.has_counter}

    def refresh(self, sensor: Sensor, mono: float) -> None:
        """Read ``sensor`` now (the sampler's thread) and keep the two newest readings."""
        for key, joules in sensor.read_energy_j().items():
            previous = self._last.get(key)
            if previous is not None and joules == previous[0][1]:
                continue  # the counter has not moved: keep the reading that shows when it did
            self._last[key] = ((mono, joules), previous[0] if previous else None)

    def edges(self, sensor: Sensor, mono: float, horizon_s: float) -> dict[str, float]:
        """Each device's counter at ``mono``, from the newest readings; never decreasing.

        The newest reading is extended at the last rate for at most ``horizon_s``
        (the sampler's period, or the counter's update period if longer).
        """
        out: dict[str, float] = {}
        for device in sensor.devices:
            readings = self._last.get(device.key)
            if readings is None:
                continue
            (t1, e1), older = readings
            value = e1
            if older is not None and t1 > older[0] and mono > t1:
                rate = (e1 - older[1]) / (t1 - older[0])
                if math.isfinite(rate) and rate > 0:
                    value = e1 + rate * min(mono - t1, horizon_s)
            value = max(value, self._edges.get(device.key, -math.inf))
            self._edges[device.key] = value
            out[device.key] = value
        return out


def edge_uncertainty_rel(device_rel: float, duration_s: float) -> float:
    """A window's relative uncertainty when its edges come from sampled counter readings.

    Each edge may be off by the energy of up to one counter update; relative to the
    window, two such edges add in quadrature to the device's own band. A window
    shorter than the counter's update period gets an uncertainty above 100 %: it is
    below what the counter resolves.
    """
    if duration_s <= 0:
        return math.inf
    edge = math.sqrt(2.0) * COUNTER_UPDATE_S / duration_s
    return math.hypot(device_rel, edge)

"""A node meter as a plain :class:`~greenml.measure.sensors.base.Sensor`: one device, ``node0``.

Its component is :data:`~greenml.measure.measurement.NODE`: the Meter keeps its
energy beside the components (``Measurement.node``), never in their sum.

A remote meter (a BMC, a plug, a PDU) answers in milliseconds to seconds, so a
thread polls it every ``period_s`` and :meth:`NodeSensor.read_power_w` returns the
latest reading at once: the Meter's sampler is never held up by the network, and
a reading older than ``stale_s`` counts as a gap, not as the current power. A
local hwmon chip with an energy channel is read directly as a counter.
"""

from __future__ import annotations

import threading
import time

from greenml.errors import SensorError
from greenml.measure.measurement import COUNTER, NODE, POWER_INTEGRATED
from greenml.measure.node.responses import NodeReading
from greenml.measure.node.sources import HwmonNodeSource, NodeSource
from greenml.measure.sensors.base import Device, Sensor

NODE_KEY = "node0"
POLL_S = 1.0
STALE_S = 10.0


class NodeSensor(Sensor):
    """The whole machine's power from a :class:`NodeSource`."""

    def __init__(self, source: NodeSource, period_s: float = POLL_S, stale_s: float = STALE_S,
                 *, poll: bool = True) -> None:  # fmt: skip
        self.source = source
        self._counter = isinstance(source, HwmonNodeSource) and bool(source.energy)
        self._latest: tuple[float, NodeReading] | None = None
        self.error: str | None = None
        self._period_s = period_s
        self._stale_s = stale_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.poll_once()  # the first reading, or the reason there is none, before a run starts
        if poll and not self._counter:
            self._thread = threading.Thread(target=self._loop, name="greenml-node-meter",
                                            daemon=True)  # fmt: skip
            self._thread.start()
        method = COUNTER if self._counter else POWER_INTEGRATED
        note = f"node meter: {source.label}"
        if not self._counter:
            note += f" (power polled every {period_s:g} s and integrated)"
        self._devices = [Device(NODE_KEY, NODE, f"node ({source.kind})", method,
                                source.uncertainty_rel, note)]  # fmt: skip

    @property
    def devices(self) -> list[Device]:
        return self._devices

    def poll_once(self) -> NodeReading | None:
        """Read the source now; keep the reading, or the reason there is none."""
        try:
            reading = self.source.read()
        except SensorError as exc:
            self.error = str(exc)
            return None
        self.error = None
        self._latest = (time.monotonic(), reading)
        return reading

    def _loop(self) -> None:
        while not self._stop.wait(self._period_s):
            self.poll_once()

    def read_power_w(self) -> dict[str, float]:
        if self._counter:
            reading = self.poll_once()
            return {NODE_KEY: reading.power_w} if reading is not None else {}
        latest = self._latest
        if latest is None or time.monotonic() - latest[0] > self._stale_s:
            return {}  # a gap: the meter has not answered lately
        return {NODE_KEY: latest[1].power_w}

    def read_energy_j(self) -> dict[str, float]:
        if not self._counter:
            return {}
        reading = self.poll_once()
        if reading is None or reading.energy_j is None:
            raise SensorError(f"node meter {self.source.label}: {self.error or 'no energy'}")
        return {NODE_KEY: reading.energy_j}

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self._period_s + 1)
        self.source.close()

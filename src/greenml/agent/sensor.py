"""A sensor whose counters come from the node agent: RAPL and GPUs without being root.

Discovery (:mod:`greenml.measure.sensors.discover`) falls back to it when the
process cannot read a counter itself (RAPL's ``energy_uj`` is root-only since
Linux 5.10) and an agent is there. Each device keeps the agent's method and
uncertainty and says ``via greenml agent`` in its note, which the run record
keeps (``measured_devices``). Power of counter devices is the client's own:
energy over time between two of its reads.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

from greenml.agent.client import AgentClient
from greenml.agent.protocol import request_line
from greenml.errors import AgentError, SensorError, SensorUnavailable
from greenml.measure.measurement import COUNTER, Method
from greenml.measure.sensors.base import Device, Sensor

VIA = "via greenml agent"


class AgentSensor(Sensor):
    """The agent's devices of the given components (``cpu``, ``dram``, ``gpu``).

    Args:
        components: Which components to measure (``psys`` is never one the Meter adds up).
        gpus: The caller's GPU ordinals to keep (None: all the agent shows).
        path: The agent's socket (default: the configured one).
        client: An open client to use instead (closed with the sensor).

    Raises:
        SensorUnavailable: No agent, or it offers none of these devices.
    """

    def __init__(
        self, components: Collection[str], gpus: Collection[int] | None = None,
        path: str | Path | None = None, client: AgentClient | None = None,
    ) -> None:  # fmt: skip
        try:
            self._client = client or AgentClient(path)
            hello = self._client.request("hello")
        except AgentError as exc:
            raise SensorUnavailable(str(exc)) from None
        self._components = sorted(set(components))
        keep_gpu = None if gpus is None else {f"gpu{i}" for i in gpus}
        where = f"{VIA} ({self._client.path})"
        self._devices = [
            Device(
                key=str(d["key"]), component=str(d["component"]), name=str(d["name"]),
                method=_method(d["method"]), uncertainty_rel=float(d["uncertainty_rel"]),
                note=f"{d['note']}; {where}" if d.get("note") else where,
            )
            for d in hello.get("devices", [])
            if d.get("component") in self._components
            and (d["component"] != "gpu" or keep_gpu is None or d["key"] in keep_gpu)
        ]  # fmt: skip
        if not self._devices:
            self._client.close()
            wanted = ", ".join(self._components)
            raise SensorUnavailable(f"the greenml agent at {self._client.path} offers no {wanted}")
        self._keys = {d.key for d in self._devices}
        token = self._client.token
        self._lines = {p: request_line("read", {"power": p, "components": self._components}, None,
                                       token) for p in (False, True)}  # fmt: skip
        self._last: dict[str, tuple[float, float]] = {}
        try:
            self.read_power_w()  # the reference of the first power reading
        except SensorError as exc:
            self._client.close()
            raise SensorUnavailable(str(exc)) from None

    @property
    def devices(self) -> list[Device]:
        return list(self._devices)

    @property
    def path(self) -> Path:
        return self._client.path

    def _read(self, power: bool) -> dict[str, Any]:
        line = self._lines[power]
        try:
            return self._client.request_line(line)
        except AgentError as exc:
            raise SensorError(f"greenml agent: {exc}") from None

    def read_energy_j(self) -> dict[str, float]:
        energy = self._read(False).get("energy_j", {})
        return {k: float(v) for k, v in energy.items() if k in self._keys}

    def read_power_w(self) -> dict[str, float]:
        answer = self._read(True)
        now = time.monotonic()
        out = {k: float(v) for k, v in answer.get("power_w", {}).items() if k in self._keys}
        for key, joules in answer.get("energy_j", {}).items():
            if key not in self._keys or key in out:
                continue
            previous = self._last.get(key)
            self._last[key] = (now, float(joules))
            if previous is not None and now > previous[0]:
                out[key] = (float(joules) - previous[1]) / (now - previous[0])
        return out

    def close(self) -> None:
        self._client.close()


def _method(value: Any) -> Method:
    text = str(value)
    return text if text in ("counter", "power-integrated", "estimated") else COUNTER  # type: ignore[return-value]


def agent_sensor(
    components: Collection[str], gpus: Collection[int] | None = None
) -> AgentSensor | None:
    """An :class:`AgentSensor` when an agent is there; None when none is (nothing said)."""
    from greenml.agent.socket_path import agent_present

    path = agent_present()
    if path is None:
        return None
    return AgentSensor(components, gpus, path)

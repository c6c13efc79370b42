"""GPU power limits and clocks through the node agent, for users who are not root.

:class:`AgentGpuControl` and :class:`AgentClockControl` offer what
:class:`~greenml.optimize.gpu_control.GpuControl` and
:class:`~greenml.optimize.gpu_clocks.ClockControl` offer (the optimizers and
``greenml gpu`` take either), over the GPUs the caller's job owns, numbered as
the job sees them (``gpu0`` is its first). The agent saves the originals and
puts them back (when the connection closes, or with ``hold="job"`` when the job
ends); its refusals become the errors the direct controls raise, with the
agent's reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from greenml.agent.client import AgentClient
from greenml.agent.sensor import AgentSensor
from greenml.errors import (
    AgentError,
    AgentRefused,
    ClockLockError,
    ClockPermissionError,
    ConfigError,
    PowerLimitError,
    PowerLimitPermissionError,
)
from greenml.optimize.cap_control import GpuLimits, check_limit
from greenml.optimize.gpu_clocks import ClockControl, GpuClocks, open_clock_control


def _ask(client: AgentClient, what: str, op: str, **args: Any) -> dict[str, Any]:
    """``op``'s result; a refusal as the power-limit (``what="power"``) or clock error."""
    try:
        return client.request(op, **args)
    except AgentRefused as exc:
        text = f"greenml agent at {client.path} refused: {exc}"
        policy = exc.code == "policy"
        if what == "power":
            raise (PowerLimitPermissionError if policy else PowerLimitError)(text) from None
        raise (ClockPermissionError if policy else ClockLockError)(text) from None
    except AgentError as exc:
        raise (PowerLimitError if what == "power" else ClockLockError)(str(exc)) from None


class _AgentControl:
    """What both controls share: the connection, the job's GPUs, who holds the changes."""

    vendor = "nvidia"
    what = "power"

    def __init__(
        self, indices: Sequence[int] | None = None, *, client: AgentClient | None = None,
        hold: str = "connection", why: str = "",
    ) -> None:  # fmt: skip
        try:
            self._client = client or AgentClient()
        except AgentError as exc:
            raise (PowerLimitError if self.what == "power" else ClockLockError)(str(exc)) from None
        self.hold, self.why = hold, why
        answer = self._ask("gpus")
        self.job: str | None = answer.get("job")
        self.allowed = {
            "power": bool(answer.get("power_limits")), "clocks": bool(answer.get("clocks"))
        }
        gpus = {int(g["index"]): g for g in answer.get("gpus", [])}
        chosen = sorted(gpus) if indices is None else list(dict.fromkeys(indices))
        for i in chosen:
            if i not in gpus:
                self._client.close()
                raise ConfigError(f"GPU index {i} requested but the agent gives this job "
                                  f"{len(gpus)} GPU(s)")  # fmt: skip
        if not chosen:
            self._client.close()
            where = f"greenml agent at {self._client.path}"
            raise PowerLimitPermissionError(f"{where}: no GPU of yours")
        self._gpus: dict[str, dict[str, Any]] = {f"gpu{i}": gpus[i] for i in chosen}
        self._changed: set[str] = set()
        self.state_file = f"greenml agent ({self._client.path})"
        self.source = f"greenml agent at {self._client.path}"

    @property
    def path(self) -> str:
        return str(self._client.path)

    @property
    def keys(self) -> list[str]:
        return list(self._gpus)

    @property
    def changed(self) -> bool:
        return bool(self._changed)

    def _ask(self, op: str, **args: Any) -> dict[str, Any]:
        result: dict[str, Any] = _ask(self._client, self.what, op, **args)
        return result

    def _refresh(self) -> None:
        for g in self._ask("gpus").get("gpus", []):
            if f"gpu{g['index']}" in self._gpus:
                self._gpus[f"gpu{g['index']}"] = g

    def _info(self, key: str) -> dict[str, Any]:
        try:
            return self._gpus[key]
        except KeyError:
            raise ConfigError(f"no GPU {key!r} here ({', '.join(self._gpus)})") from None

    def restore(self) -> dict[str, Any]:
        """Put back what this object changed; {key: restored value}."""
        if not self._changed:
            return {}
        indices = sorted(int(k[3:]) for k in self._changed)
        answer = self._ask("restore", gpus=indices, why=self.why or "restore")
        self._changed.clear()
        return {u["gpu"]: u["to"] for u in answer.get("restored", []) if u["what"] == self.kind}

    kind = "power_limit"

    def sensor(self) -> AgentSensor:
        """A sensor over these GPUs, read through the agent."""
        return AgentSensor(("gpu",), [int(k[3:]) for k in self._gpus], self._client.path)

    def close(self) -> None:
        """Close the connection: the agent undoes what it still holds for it."""
        self._client.close()


class AgentGpuControl(_AgentControl):
    """Power limits of the job's GPUs through the agent (the interface of GpuControl)."""

    def get(self, key: str) -> GpuLimits:
        g = self._info(key)
        b = g.get("bounds", {})
        return GpuLimits(
            key=key, index=int(key[3:]), uuid=str(g["uuid"]), name=str(g["name"]),
            limit_w=float(g["limit_w"]), default_w=float(g["default_w"]),
            min_w=max(float(g["min_w"]), float(b.get("min_power_w", g["min_w"]))),
            max_w=min(float(g["max_w"]), float(b.get("max_power_w", g["max_w"]))),
        )  # fmt: skip

    def limits(self) -> list[GpuLimits]:
        self._refresh()
        return [self.get(k) for k in self._gpus]

    def check_permission(self) -> None:
        """Raise PowerLimitPermissionError now when the agent would refuse a change."""
        if not self.allowed["power"]:
            raise PowerLimitPermissionError(
                f"greenml agent at {self.path} refused: power limits may not be changed here")

    def set_limit(self, key: str, limit_w: float) -> GpuLimits:
        gpu = self.get(key)
        check_limit(gpu, limit_w)
        self._ask("set_power_limit", gpu=gpu.index, watts=limit_w, hold=self.hold,
                  why=self.why or "greenml")  # fmt: skip
        self._changed.add(key)
        return gpu

    def set_all(self, limit_w: float) -> None:
        gpus = self.limits()
        for gpu in gpus:
            check_limit(gpu, limit_w)
        for gpu in gpus:
            self.set_limit(gpu.key, limit_w)


class AgentClockControl(_AgentControl):
    """Locked graphics clocks of the job's GPUs through the agent (as ClockControl)."""

    what = "clocks"
    kind = "clocks"

    def get(self, key: str) -> GpuClocks:
        g = self._info(key)
        if not g.get("supported_mhz"):
            raise ClockLockError(f"{key}: the agent lists no supported clock")
        b = g.get("bounds", {})
        low, high = b.get("min_clock_mhz", 0.0), b.get("max_clock_mhz", float("inf"))
        every = tuple(int(c) for c in g["supported_mhz"])
        supported = tuple(c for c in every if low <= c <= high) or every
        return GpuClocks(key, int(key[3:]), str(g["uuid"]), str(g["name"]), self.vendor,
                         supported, g.get("current_mhz"))  # fmt: skip

    def clocks(self) -> list[GpuClocks]:
        self._refresh()
        return [self.get(k) for k in self._gpus]

    def check_permission(self) -> None:
        if not self.allowed["clocks"]:
            raise ClockPermissionError(
                f"greenml agent at {self.path} refused: clocks may not be locked here")

    def lock(self, key: str, mhz: float) -> int:
        target = self.get(key).nearest(mhz)
        answer = self._ask("lock_clocks", gpu=int(key[3:]), mhz=target, hold=self.hold,
                           why=self.why or "greenml")  # fmt: skip
        self._changed.add(key)
        return int(answer.get("to_mhz", target))

    def lock_all(self, mhz: float) -> None:
        for gpu in self.clocks():
            gpu.nearest(mhz)
        for key in self._gpus:
            self.lock(key, mhz)

    def guard(self) -> None:
        """Nothing to install: the agent undoes the changes when the connection closes."""


def open_clocks(
    gpus: Sequence[int] | None, *, hold: str = "connection", why: str = "clock planner"
) -> ClockControl | AgentClockControl:
    """Clock control through the agent for a user who is not root where one is there, else
    :func:`~greenml.optimize.gpu_clocks.open_clock_control` (NVML or AMD SMI directly)."""
    from greenml.agent.client import use_agent_for_control

    if use_agent_for_control() is not None:
        return AgentClockControl(gpus, hold=hold, why=why)
    return open_clock_control(gpus)

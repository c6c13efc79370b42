"""The agent's GPU changes: made with greenml's own controls, each held by someone, all undone.

A change is made with :class:`GpuControl` (power limits) or :class:`ClockControl`
(locked clocks) over that one GPU, whose original is saved first in the agent's
state files (the same files and format as ``greenml gpu``). Each change is
*held*: by the connection that made it (undone when it closes) or by the job
(undone at ``job_end``). At the agent's start, whatever the state files still
hold (a crash, a SIGKILL mid-change) is put back with the existing restore logic
(:func:`restore_from_state`, :func:`restore_clocks_from_state`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from greenml.agent.audit import AGENT, AuditLog, Peer
from greenml.errors import AgentRefused, ClockLockError, GreenmlError, PowerLimitError
from greenml.optimize.gpu_clocks import ClockControl, open_clock_control, restore_clocks_from_state
from greenml.optimize.gpu_control import GpuControl
from greenml.optimize.gpu_restore import restore_from_state

POWER, CLOCKS = "power_limit", "clocks"


@dataclass
class Holding:
    """A change in force: who holds it (``conn:N`` or ``job:ID``), for which job and user."""

    holder: str
    job: str | None
    uid: int


class GpuDesk:
    """Makes, tracks and undoes the changes of the node's GPUs (by physical ordinal)."""

    def __init__(self, nvml: Any, state_dir: Path, audit: AuditLog) -> None:
        self._nvml = nvml
        self.power_state = state_dir / "gpu_power_limits.json"
        self.clock_state = state_dir / "gpu_clocks.json"
        self._audit = audit
        self._lock = threading.RLock()
        self._power: dict[int, GpuControl] = {}
        self._clocks: dict[int, ClockControl] = {}
        self._held: dict[tuple[int, str], Holding] = {}

    # -- at start -------------------------------------------------------------

    def restore_after_crash(self) -> None:
        """Put back what the state files hold (a previous agent died mid-change)."""
        with self._lock:
            if self.power_state.exists():
                result = restore_from_state(self.power_state, nvml=self._nvml)
                for uuid, watts in result.restored.items():
                    self._audit.write(AGENT, POWER, {"uuid": uuid}, "restored", after=watts,
                                      why="agent start after a crash")  # fmt: skip
            if self.clock_state.exists():
                restored, _ = restore_clocks_from_state(self.clock_state, nvml=self._nvml)
                for uuid, original in restored.items():
                    self._audit.write(AGENT, CLOCKS, {"uuid": uuid}, "restored", after=original,
                                      why="agent start after a crash")  # fmt: skip

    # -- reading ----------------------------------------------------------------

    def power(self, gpu: int) -> GpuControl:
        with self._lock:
            if gpu not in self._power:
                self._power[gpu] = GpuControl([gpu], nvml=self._nvml, state_file=self.power_state)
            return self._power[gpu]

    def clocks(self, gpu: int) -> ClockControl:
        with self._lock:
            if gpu not in self._clocks:
                self._clocks[gpu] = open_clock_control([gpu], nvml=self._nvml,
                                                       state_file=self.clock_state)  # fmt: skip
            return self._clocks[gpu]

    def describe(self, gpu: int) -> dict[str, Any]:
        """A GPU's identity, limits, clocks and who holds a change of it."""
        limits = self.power(gpu).get(f"gpu{gpu}")
        out = {k: v for k, v in limits.to_dict().items() if k not in ("key", "index")}
        try:
            c = self.clocks(gpu).get(f"gpu{gpu}")
            out.update(min_mhz=c.min_mhz, max_mhz=c.max_mhz, current_mhz=c.current_mhz,
                       supported_mhz=list(c.supported_mhz))  # fmt: skip
        except GreenmlError:
            pass
        out["held"] = {kind: h.holder for (g, kind), h in self._held.items() if g == gpu}
        return out

    # -- changing -------------------------------------------------------------

    def _take(self, gpu: int, kind: str, holding: Holding) -> None:
        held = self._held.get((gpu, kind))
        if held is not None and held.uid != holding.uid and held.job != holding.job:
            raise AgentRefused(f"GPU {gpu}'s {kind} is held by another user's change")
        if held is None or not holding.holder.startswith("conn:"):
            self._held[(gpu, kind)] = holding

    def set_power(
        self, gpu: int, watts: float, holding: Holding, peer: Peer, why: str
    ) -> tuple[float, float]:
        """Set GPU ``gpu``'s power limit (original saved first); (from W, to W)."""
        with self._lock:
            control = self.power(gpu)
            before = control.get(f"gpu{gpu}")
            self._take(gpu, POWER, holding)
            ident = {"index": gpu, "uuid": before.uuid, "name": before.name}
            try:
                control.set_limit(f"gpu{gpu}", watts)
            except PowerLimitError as exc:
                self._audit.write(peer, POWER, ident, f"failed: {exc}", job=holding.job,
                                  before=before.limit_w, after=watts, why=why)  # fmt: skip
                raise AgentRefused(str(exc), "unavailable") from exc
            self._audit.write(peer, POWER, ident, "done", job=holding.job,
                              before=before.limit_w, after=watts, why=why)  # fmt: skip
            return before.limit_w, watts

    def lock_clocks(
        self, gpu: int, mhz: float, holding: Holding, peer: Peer, why: str
    ) -> tuple[float | None, int]:
        """Lock GPU ``gpu``'s graphics clock (original saved first); (from MHz, locked MHz)."""
        with self._lock:
            control = self.clocks(gpu)
            before = control.get(f"gpu{gpu}")
            self._take(gpu, CLOCKS, holding)
            ident = {"index": gpu, "uuid": before.uuid, "name": before.name}
            try:
                locked = control.lock(f"gpu{gpu}", mhz)
            except ClockLockError as exc:
                self._audit.write(peer, CLOCKS, ident, f"failed: {exc}", job=holding.job,
                                  before=before.current_mhz, after=mhz, why=why)  # fmt: skip
                raise AgentRefused(str(exc), "unavailable") from exc
            self._audit.write(peer, CLOCKS, ident, "done", job=holding.job,
                              before=before.current_mhz, after=locked, why=why)  # fmt: skip
            return before.current_mhz, locked

    def release(
        self, which: Callable[[int, Holding], bool], peer: Peer, why: str
    ) -> list[dict[str, Any]]:
        """Undo every held change for which ``which(gpu, holding)`` is true; what was undone."""
        undone: list[dict[str, Any]] = []
        with self._lock:
            for (gpu, kind), holding in list(self._held.items()):
                if not which(gpu, holding):
                    continue
                try:
                    undone.append(self._undo(gpu, kind, holding, peer, why))
                except GreenmlError as exc:
                    self._audit.write(peer, kind, {"index": gpu}, f"restore failed: {exc}",
                                      job=holding.job, why=why)  # fmt: skip
                    continue
                del self._held[(gpu, kind)]
        return undone

    def _undo(self, gpu: int, kind: str, holding: Holding, peer: Peer, why: str) -> dict[str, Any]:
        key = f"gpu{gpu}"
        if kind == POWER:
            control = self.power(gpu)
            now = control.get(key)
            restored: Any = control.restore().get(key)
            ident = {"index": gpu, "uuid": now.uuid, "name": now.name}
            before: Any = now.limit_w
        else:
            clocks = self.clocks(gpu)
            current = clocks.get(key)
            restored = clocks.restore().get(key)
            ident = {"index": gpu, "uuid": current.uuid, "name": current.name}
            before = current.current_mhz
        self._audit.write(peer, kind, ident, "restored", job=holding.job, before=before,
                          after=restored, why=why)  # fmt: skip
        return {"gpu": gpu, "what": kind, "from": before, "to": restored}

    def held(self) -> list[dict[str, Any]]:
        with self._lock:
            return [{"gpu": g, "what": k, "holder": h.holder, "job": h.job, "uid": h.uid}
                    for (g, k), h in self._held.items()]  # fmt: skip

    def close(self) -> None:
        """Undo every change still held, then release the libraries."""
        self.release(lambda _g, _h: True, AGENT, "agent stopped")
        for control in self._power.values():
            with contextlib.suppress(Exception):
                control.close()
        for clocks in self._clocks.values():
            with contextlib.suppress(Exception):
                clocks.close()

"""Start the agent: restore what a crash left, open the counters, bind, drop privileges, serve.

The order matters: the GPUs are put back first (a previous agent may have died
mid-change), the socket, state and audit files are opened while the agent still
has every capability, then all but the two it needs are dropped, then it serves
until SIGTERM or SIGINT, and on the way out undoes every change still held.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from greenml.agent.audit import AuditLog
from greenml.agent.config import AgentConfig, private_dir
from greenml.agent.desk import GpuDesk
from greenml.agent.jobs import JobTable
from greenml.agent.privileges import drop_capabilities
from greenml.agent.readers import NodeReader
from greenml.agent.server import AgentServer
from greenml.agent.service import AgentService, write_pid
from greenml.errors import ConfigError, SensorUnavailable
from greenml.optimize.gpu_control import load_nvml

log = logging.getLogger(__name__)


@dataclass
class Agent:
    """A started agent: its server (serve with :meth:`serve`) and what it holds."""

    server: AgentServer
    service: AgentService
    lock: int = -1

    def serve(self) -> None:
        """Serve until SIGTERM or SIGINT (main thread) or :meth:`stop`, then undo every change."""
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: self.server.stop())
        try:
            self.server.serve_forever()
        finally:
            self.close()

    def stop(self) -> None:
        self.server.stop()

    def close(self) -> None:
        self.server.stop()
        if self.service.desk is not None:
            self.service.desk.close()
        self.service.reader.close()
        self.service.audit.close()
        if self.lock >= 0:
            os.close(self.lock)
            self.lock = -1


def start_agent(config: AgentConfig, *, nvml: Any | None = None, drop: bool = True) -> Agent:
    """Everything up to serving: restore, open, bind, drop privileges.

    Raises:
        ConfigError: The socket, state folder or audit log cannot be created.
    """
    state = private_dir(config.state_dir)
    lock = single_instance(state)  # before anything is restored: another agent may hold it
    audit = AuditLog(config.audit_log)
    if nvml is None:
        try:
            nvml = load_nvml()
        except SensorUnavailable as exc:
            log.info("greenml agent: no GPU control: %s", exc)
            nvml = None
    desk = GpuDesk(nvml, state, audit) if nvml is not None else None
    if desk is not None:
        desk.restore_after_crash()
    reader = NodeReader(config.sys_root, nvml, config.min_read_interval_s)
    jobs = JobTable(state / "jobs.json")
    service = AgentService(config, reader, desk, jobs, audit)
    server = AgentServer(config, service)
    server.bind()
    write_pid(state)
    service.capabilities = drop_capabilities() if drop else "kept (drop=False)"
    return Agent(server, service, lock)


def single_instance(state: Path) -> int:
    """An exclusive lock on ``state/agent.lock``, held for the agent's life.

    Raises:
        ConfigError: Another agent runs with this state folder (four prologs at once).
    """
    import fcntl

    fd = os.open(state / "agent.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise ConfigError(f"another greenml agent runs with the state folder {state}") from None
    return fd

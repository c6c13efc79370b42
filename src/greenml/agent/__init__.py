"""The node agent (``greenml agent``): privileged reads and bounded, audited GPU changes.

A small daemon run by root serves unprivileged users on a Unix socket
(:mod:`~greenml.agent.server`, the protocol in :mod:`~greenml.agent.protocol`):
RAPL and GPU counters for any local user, power limits and locked clocks for a
job's own GPUs within the administrator's bounds (:mod:`~greenml.agent.policy`),
every change in an audit log and undone at the job's end. Clients:
:class:`AgentClient`, :class:`AgentSensor` (the Meter's fallback),
:class:`AgentGpuControl` and :class:`AgentClockControl`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

_LAZY = {
    "AgentClient": "greenml.agent.client",
    "AgentClockControl": "greenml.agent.control",
    "AgentConfig": "greenml.agent.config",
    "AgentGpuControl": "greenml.agent.control",
    "AgentSensor": "greenml.agent.sensor",
    "load_config": "greenml.agent.config",
    "start_agent": "greenml.agent.daemon",
}

__all__ = [
    "AgentClient",
    "AgentClockControl",
    "AgentConfig",
    "AgentGpuControl",
    "AgentSensor",
    "load_config",
    "start_agent",
]

if TYPE_CHECKING:
    from greenml.agent.client import AgentClient
    from greenml.agent.config import AgentConfig, load_config
    from greenml.agent.control import AgentClockControl, AgentGpuControl
    from greenml.agent.daemon import start_agent
    from greenml.agent.sensor import AgentSensor


__getattr__ = lazy_exports(__name__, _LAZY)

"""``greenml doctor``'s view of the node agent: what it reads for this user, what it may change.

Nothing is said when no agent is there (today's findings stand as they are).
"""

from __future__ import annotations

from greenml.agent.client import AgentClient
from greenml.agent.socket_path import agent_present
from greenml.errors import AgentError, AgentRefused
from greenml.measure.doctor import PERMISSION, UNSUPPORTED, USABLE, DeviceReport, Finding
from greenml.measure.sensors.base import Device

TITLE = "greenml agent (counters and GPU changes for users who are not root)"
CONTROL_TITLE = "GPU power limits through the greenml agent (optimizer, greenml gpu set-limit)"


def probe_agent() -> list[Finding]:
    """The agent's findings (reads, then GPU changes); [] when no agent is there."""
    path = agent_present()
    if path is None:
        return []
    try:
        with AgentClient(path) as client:
            hello = client.request("hello")
            try:
                gpus = client.request("gpus")
                control = Finding("agent-control", CONTROL_TITLE, USABLE, _control_reason(gpus))
            except AgentRefused as exc:
                fix = "run it inside a job that the node's prolog registered with the agent"
                control = Finding("agent-control", CONTROL_TITLE, PERMISSION, str(exc), fix)
    except AgentError as exc:
        return [Finding("agent", TITLE, UNSUPPORTED, f"an agent socket at {path}: {exc}")]
    you = hello["you"]
    reason = (f"at {path}, version {hello['version']}; you: {you['user']}"
              + (f", job {you['job']}" if you.get("job") else ", no job token"))  # fmt: skip
    devices = tuple(
        DeviceReport.of(Device(d["key"], d["component"], d["name"], d["method"],
                               float(d["uncertainty_rel"]), f"via greenml agent ({path})"))
        for d in hello["devices"]
    )  # fmt: skip
    return [Finding("agent", TITLE, USABLE, reason, "", devices), control]


def _control_reason(gpus: dict[str, object]) -> str:
    rows = gpus.get("gpus", [])
    keys = ", ".join(str(g["key"]) for g in rows) if isinstance(rows, list) else ""
    job = gpus.get("job")
    return f"settable on {keys or 'no GPU'}" + (f" (job {job})" if job else "")

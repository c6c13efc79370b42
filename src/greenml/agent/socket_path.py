"""Where the node agent listens, and whether it is there: the check every run makes.

Apart from the client so that a run on a machine without an agent pays one
``stat``, not the client's and protocol's imports.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["agent_present", "agent_socket"]


def agent_socket() -> Path | None:
    """The agent's socket path; None when the user turned the agent off."""
    from greenml.config.settings import setting

    value = str(setting("agent.socket") or "")
    return None if value.strip().lower() in ("", "off", "none") else Path(value)


def agent_present() -> Path | None:
    """The agent's socket when one is there to connect to (not root-only reasons: any user)."""
    path = agent_socket()
    if path is None:
        return None
    try:
        return path if path.is_socket() else None
    except OSError:
        return None

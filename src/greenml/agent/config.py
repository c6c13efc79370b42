"""The agent's configuration: ``/etc/greenml/agent.toml``, written by the administrator.

::

    [agent]
    socket = "/run/greenml/agent.sock"     # the Unix socket clients connect to
    socket_group = "greenml"               # optional: socket 0660 for this group (else 0666)
    state_dir = "/var/lib/greenml/agent"   # original limits and clocks, jobs (root, 0700)
    audit_log = "/var/log/greenml/agent-audit.jsonl"
    sys_root = "/"                         # where /sys is read (a test's fake tree)
    max_message_bytes = 4096
    requests_per_s = 1000                  # per user, with a burst of as many
    max_connections_per_user = 8
    min_read_interval_s = 0.0              # serve cached counters younger than this

    [policy]
    power_limits = true                    # may jobs change power limits …
    clocks = true                          # … and lock clocks
    require_job = true                     # only a job's token may change its GPUs
    [policy.users]                         # with require_job = false: user → GPU ordinals
    alice = [0, 1]

    [[bounds]]                             # first whose model is in the GPU's name wins
    model = "H100"
    min_power_w = 300
    max_power_w = 700
    min_clock_mhz = 1000

The file must be owned by root and not writable by others, as the agent refuses to start
on a file any user could have changed.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from greenml.config.toml_file import read_toml
from greenml.errors import ConfigError

DEFAULT_CONFIG = Path("/etc/greenml/agent.toml")
DEFAULT_SOCKET = "/run/greenml/agent.sock"


@dataclass(frozen=True)
class Bounds:
    """What the administrator allows on GPUs whose name contains ``model`` (None: the GPU's own)."""

    model: str = ""
    min_power_w: float | None = None
    max_power_w: float | None = None
    min_clock_mhz: float | None = None
    max_clock_mhz: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, "")}


@dataclass(frozen=True)
class AgentConfig:
    """Everything the agent reads from its file, with the documented defaults."""

    socket: Path = Path(DEFAULT_SOCKET)
    socket_group: str | None = None
    state_dir: Path = Path("/var/lib/greenml/agent")
    audit_log: Path = Path("/var/log/greenml/agent-audit.jsonl")
    sys_root: Path = Path("/")
    max_message_bytes: int = 4096
    requests_per_s: float = 1000.0
    max_connections_per_user: int = 8
    min_read_interval_s: float = 0.0
    power_limits: bool = True
    clocks: bool = True
    require_job: bool = True
    users: dict[str, tuple[int, ...]] = field(default_factory=dict)
    bounds: tuple[Bounds, ...] = ()

    def bounds_for(self, gpu_name: str) -> Bounds:
        """The first bounds whose model is in ``gpu_name``; no bounds when none is."""
        for b in self.bounds:
            if b.model and b.model.lower() in gpu_name.lower():
                return b
        return Bounds()


_AGENT_KEYS = {
    "socket": Path, "socket_group": str, "state_dir": Path, "audit_log": Path,
    "sys_root": Path, "max_message_bytes": int, "requests_per_s": float,
    "max_connections_per_user": int, "min_read_interval_s": float,
}  # fmt: skip
_POLICY_FLAGS = ("power_limits", "clocks", "require_job")
_BOUND_KEYS = ("min_power_w", "max_power_w", "min_clock_mhz", "max_clock_mhz")


def load_config(path: str | Path = DEFAULT_CONFIG, *, check_owner: bool = True) -> AgentConfig:
    """The agent's configuration (defaults when ``path`` does not exist).

    Raises:
        ConfigError: Unreadable, not TOML, a wrong key or type, or writable by non-root.
    """
    path = Path(path)
    if check_owner and path.exists():
        st = path.stat()
        if st.st_uid != 0 or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise ConfigError(
                f"agent config {path} must be owned by root and writable by root only"
            )
    data = read_toml(path, "agent config", missing_ok=True)
    unknown = set(data) - {"agent", "policy", "bounds"}
    if unknown:
        raise ConfigError(f"agent config {path}: unknown table [{sorted(unknown)[0]}]")
    values: dict[str, Any] = {}
    for key, value in _table(data, "agent", path).items():
        kind = _AGENT_KEYS.get(key)
        if kind is None:
            raise ConfigError(f"agent config {path}: [agent] has no key {key!r}")
        values[key] = _typed(value, kind, f"{path}: [agent] {key}")
    policy = _table(data, "policy", path)
    for key, value in policy.items():
        if key in _POLICY_FLAGS:
            values[key] = _typed(value, bool, f"{path}: [policy] {key}")
        elif key == "users":
            values["users"] = _users(value, path)
        else:
            raise ConfigError(f"agent config {path}: [policy] has no key {key!r}")
    values["bounds"] = tuple(_bounds(b, path) for b in _list(data.get("bounds", []), path))
    config = AgentConfig(**values)
    if config.max_message_bytes < 256 or config.requests_per_s <= 0:
        raise ConfigError(f"agent config {path}: max_message_bytes >= 256, requests_per_s > 0")
    return config


def _table(data: dict[str, Any], name: str, path: Path) -> dict[str, Any]:
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise ConfigError(f"agent config {path}: [{name}] must be a table")
    return table


def _list(value: Any, path: Path) -> list[Any]:
    if not isinstance(value, list):
        raise ConfigError(f"agent config {path}: [[bounds]] must be an array of tables")
    return value


def _typed(value: Any, kind: type, where: str) -> Any:
    if kind is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: true or false, not {value!r}")
        return value
    if kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: a number, not {value!r}")
        return kind(value)
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: a text, not {value!r}")
    return Path(value) if kind is Path else value


def _users(value: Any, path: Path) -> dict[str, tuple[int, ...]]:
    if not isinstance(value, dict):
        raise ConfigError(f"agent config {path}: [policy.users] must map users to GPU lists")
    out: dict[str, tuple[int, ...]] = {}
    for user, gpus in value.items():
        if not isinstance(gpus, list) or not all(
            isinstance(g, int) and not isinstance(g, bool) and g >= 0 for g in gpus
        ):
            raise ConfigError(f"agent config {path}: [policy.users] {user}: a list of GPU ordinals")
        out[str(user)] = tuple(gpus)
    return out


def _bounds(table: Any, path: Path) -> Bounds:
    if not isinstance(table, dict) or not isinstance(table.get("model"), str):
        raise ConfigError(f"agent config {path}: each [[bounds]] needs a model text")
    extra = set(table) - {"model", *_BOUND_KEYS}
    if extra:
        raise ConfigError(f"agent config {path}: [[bounds]] has no key {sorted(extra)[0]!r}")
    numbers = {
        k: _typed(table[k], float, f"{path}: [[bounds]] {k}") for k in _BOUND_KEYS if k in table
    }
    return Bounds(model=table["model"], **numbers)


def socket_mode(config: AgentConfig) -> int:
    """0660 with a socket group, else 0666: who may connect (the policy decides the rest)."""
    return 0o660 if config.socket_group else 0o666


def private_dir(path: Path) -> Path:
    """``path`` created if needed, owned by root, mode 0700."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path

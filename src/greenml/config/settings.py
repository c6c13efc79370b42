"""The declared settings, and each one's effective value with where it came from.

Order: an option (a CLI option or a ``greenml.Run`` argument) > the environment
(``GREENML_…``) > the config file (``config.toml`` in the per-user config
folder, :func:`~greenml.config.paths.default_config_path`) > the default.
The ``[location]`` table is the one :mod:`greenml.accounting.location` reads
(where the first layer naming any location wins as a whole); the other keys
live in ``[run]``, ``[node]`` and ``[store]``. A new setting is one more :class:`Setting` here.

Lazy imports: the TOML parser and platformdirs, when the file is read.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from greenml.errors import ConfigError
from greenml.quantities import bounds


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{value!r} is not a string")
    return value


def _text_or_number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigError(f"{value!r} is neither a number nor a name")
    return str(value)


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigError(f"{value!r} is not a number")
    try:
        return float(value)
    except ValueError:
        raise ConfigError(f"{value!r} is not a number") from None


def _names(value: Any) -> list[str]:
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ConfigError(f"{value!r} is not a list of names")


@dataclass(frozen=True)
class Setting:
    """One setting: its name, where it lives in the file, its variable, its default."""

    name: str
    section: str  # the TOML table
    key: str
    env: str | None
    default: Any
    help: str
    parse: Callable[[Any], Any] = _text
    check: Callable[[Any], Any] | None = None
    """Applied to a value from any source, an option or Python argument included."""


SETTINGS: tuple[Setting, ...] = (
    Setting("location.zone", "location", "zone", "GREENML_ZONE", None,
            "grid zone (DE, US-CAL-CISO)"),
    Setting("location.region", "location", "region", "GREENML_REGION", None, "cloud region"),
    Setting("location.country", "location", "country", "GREENML_COUNTRY", None, "country"),
    Setting("location.ci", "location", "ci", "GREENML_CI", None,
            "fixed intensity, gCO2eq/kWh", _number),
    Setting("location.trace", "location", "trace", "GREENML_INTENSITY_TRACE", None,
            "hourly intensity CSV"),
    Setting("location.provider", "location", "provider", "GREENML_INTENSITY_PROVIDER", "static",
            "who answers for a zone"),
    Setting("run.pue", "run", "pue", "GREENML_PUE", None, "PUE: a number >= 1 or a provider",
            _text_or_number),
    Setting("run.price", "run", "price", "GREENML_PRICE", None, "electricity, USD/kWh", _number),
    Setting("run.sample_hz", "run", "sample_hz", "GREENML_SAMPLE_HZ", 1.0,
            "power samples per second", bounds.sample_hz, bounds.sample_hz),
    Setting("run.log_to", "run", "log_to", "GREENML_LOG_TO", [],
            "trackers: mlflow, wandb, tensorboard", _names),
    Setting("node.meter", "node", "meter", "GREENML_NODE_METER", None,
            "node power meter: redfish://, ipmi://, hwmon:, shelly://, tasmota://, snmp://, "
            "http(s)://…#JSONPATH"),
    Setting("store.db", "store", "db", "GREENML_DB", None,
            "run store: a path or URL (default: the per-user SQLite file)"),
    Setting("server.url", "server", "url", "GREENML_SERVER", None,
            "team server that finished runs are sent to"),
    Setting("server.token", "server", "token", "GREENML_TOKEN", None,
            "team-server token (shown masked)"),
    Setting("agent.socket", "agent", "socket", "GREENML_AGENT_SOCKET", "/run/greenml/agent.sock",
            "the node agent's socket (greenml agent); off: never use it"),
)  # fmt: skip
SECRET = frozenset({"server.token"})
"""Settings whose value is never printed (``greenml config show`` masks them)."""
_BY_NAME = {s.name: s for s in SETTINGS}


@dataclass(frozen=True)
class Effective:
    """A setting's value and where it came from (``option``, ``environment (VAR)`` …)."""

    setting: Setting
    value: Any
    source: str


def config_path() -> Path:
    """The config file greenml reads (it may not exist)."""
    from greenml.config.paths import default_config_path

    return default_config_path()


def read_file(path: Path | None = None) -> dict[str, Any]:
    """The config file as TOML tables ({} when it does not exist).

    Raises:
        ConfigError: The file cannot be read or parsed.
    """
    from greenml.config.toml_file import read_toml

    return read_toml(path or config_path(), "config file", missing_ok=True)


def effective(
    options: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    path: Path | None = None,
) -> list[Effective]:
    """Every declared setting's effective value and source.

    Raises:
        ConfigError: The file cannot be read, or a value has the wrong type.
    """
    options = options or {}
    env = os.environ if env is None else env
    path = path or config_path()
    data = read_file(path)
    out = []
    for s in SETTINGS:
        out.append(_resolve(s, options.get(s.name), env, data, path))
    return out


def setting(
    name: str, given: Any = None, env: Mapping[str, str] | None = None,
    path: Path | None = None,
) -> Any:  # fmt: skip
    """One setting's effective value (``given``, when not ``None``, wins)."""
    s = _BY_NAME[name]
    if given is not None:
        return s.check(given) if s.check else given
    env = os.environ if env is None else env
    path = path or config_path()
    return _resolve(s, None, env, read_file(path), path).value


def _resolve(
    s: Setting, given: Any, env: Mapping[str, str], data: Mapping[str, Any], path: Path
) -> Effective:
    if given is not None:
        return Effective(s, s.check(given) if s.check else given, "option")
    if s.env and env.get(s.env, "").strip():
        try:
            return Effective(s, s.parse(env[s.env]), f"environment ({s.env})")
        except ConfigError as exc:
            raise ConfigError(f"{s.env}: {exc}") from None
    table = data.get(s.section)
    if isinstance(table, dict) and s.key in table and str(table[s.key]).strip():
        try:
            return Effective(s, s.parse(table[s.key]), f"file ({path} [{s.section}])")
        except ConfigError as exc:
            raise ConfigError(f"config file {path}: [{s.section}] {s.key}: {exc}") from None
    return Effective(s, s.default, "default")

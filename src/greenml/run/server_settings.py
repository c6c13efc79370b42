"""Which team server finished runs go to, and with which token.

Order: an explicit value (``greenml run --server``) > ``GREENML_SERVER`` /
``GREENML_TOKEN`` > the ``[server]`` table of the config file (the one of
:func:`greenml.config.paths.default_config_path`)::

    [server]
    url = "https://greenml.example.org"
    token = "gml_…"

No server anywhere: runs stay local, as before. A server without a token is a
configuration error, said once when a run is sent.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from greenml.errors import ConfigError

SERVER_ENV = "GREENML_SERVER"
TOKEN_ENV = "GREENML_TOKEN"
KEYS = ("url", "token")


@dataclass(frozen=True)
class ServerSettings:
    """A team server's base URL (no trailing slash) and the token to send runs with."""

    url: str
    token: str | None

    def __repr__(self) -> str:  # never print the token
        return f"ServerSettings(url={self.url!r}, token={'set' if self.token else None})"


def server_settings(
    url: str | None = None, config_path: Path | None = None
) -> ServerSettings | None:
    """The server runs go to, or None (no server configured).

    Raises:
        ConfigError: A URL that is not http(s), or a config file that cannot be read.
    """
    from_file: dict[str, str] = {}
    if not (url or os.environ.get(SERVER_ENV)) or not os.environ.get(TOKEN_ENV):
        from greenml.config.paths import default_config_path

        from_file = read_server_config(config_path or default_config_path())
    chosen = (url or os.environ.get(SERVER_ENV) or from_file.get("url") or "").strip()
    if not chosen:
        return None
    if not chosen.startswith(("http://", "https://")):
        from greenml.store.url import mask_url

        shown = mask_url(chosen)
        raise ConfigError(f"server URL must start with http:// or https://, not {shown!r}")
    token = (os.environ.get(TOKEN_ENV) or from_file.get("token") or "").strip() or None
    return ServerSettings(chosen.rstrip("/"), token)


def read_server_config(path: Path) -> dict[str, str]:
    """The ``[server]`` table of a TOML file ({} when the file or table is absent).

    Raises:
        ConfigError: Unreadable TOML, an unknown key, or a value that is not a string.
    """
    from greenml.config.toml_file import read_toml

    data = read_toml(path, "config file", missing_ok=True)
    section = data.get("server", {})
    if not isinstance(section, dict):
        raise ConfigError(f"config file {path}: [server] must be a table")
    unknown = sorted(set(section) - set(KEYS))
    if unknown:
        raise ConfigError(f"config file {path}: unknown [server] key(s) {', '.join(unknown)}; "
                          f"known: {', '.join(KEYS)}")  # fmt: skip
    for key, value in section.items():
        if not isinstance(value, str):
            raise ConfigError(f"config file {path}: [server] {key} must be a string")
    return {k: v for k, v in section.items() if v.strip()}

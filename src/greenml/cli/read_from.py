"""Where a read command reads from: the team server or the run store, by one rule.

``--db`` and ``--server`` name a place explicitly (both at once is an error);
without either, the team server of ``$GREENML_SERVER`` or the config file's
``[server] url`` is read when one is set, else the local store. Every read
command (``runs list``, ``jobs list|show``, ``diagnose --job``) follows it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.errors import ConfigError

if TYPE_CHECKING:
    from greenml.run.server_settings import ServerSettings


def read_server(db_url: str | None, server_url: str | None) -> ServerSettings | None:
    """The team server to read from, or None for the store (``--db`` forces the store).

    Raises:
        ConfigError: Both ``--db`` and ``--server`` given, or a server URL that is not valid.
    """
    if db_url is not None:
        if server_url is not None:
            raise ConfigError("--db and --server name two places to read from: pass one")
        return None
    from greenml.run.server_settings import server_settings

    return server_settings(server_url)

"""Where the per-user config file is: its own module, so that finding it imports no accounting."""

from __future__ import annotations

from pathlib import Path

__all__ = ["default_config_path"]


def default_config_path() -> Path:
    """``config.toml`` in the per-user config folder (platformdirs)."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("greenml")) / "config.toml"

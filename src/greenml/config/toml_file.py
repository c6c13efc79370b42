"""The one reader of TOML files: the config file, market declarations, TCO inputs.

Every reader of a TOML file goes through :func:`read_toml`, so a file that
cannot be read says so in the same one line wherever it is named: what the
file is, its path, and why (missing, unreadable, not UTF-8, not valid TOML
with the line and column). The TOML parser is imported only when a file is there to parse.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from greenml.errors import ConfigError


def read_toml(path: str | Path, what: str, *, missing_ok: bool = False) -> dict[str, Any]:
    """The tables of a TOML file.

    Args:
        path: The file.
        what: What the file is, for messages (``config file``, ``market file``).
        missing_ok: A file that does not exist reads as ``{}`` instead of an error.

    Raises:
        ConfigError: Missing (unless ``missing_ok``), unreadable, not UTF-8, or not TOML.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        if missing_ok:
            return {}
        raise ConfigError(f"{what} {path} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"{what} {path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{what} {path}: not UTF-8 text") from None
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        reason = " ".join(str(exc).split())
        raise ConfigError(f"{what} {path}: not valid TOML ({reason})") from None
    return data

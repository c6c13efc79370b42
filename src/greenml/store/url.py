"""Where the run store lives: resolve a user's URL or path into a SQLAlchemy URL.

Order: an explicit URL > ``GREENML_DB`` > a SQLite file in the per-user data
directory. This module never imports SQLAlchemy, so it is cheap to call.

Lazy imports: platformdirs (~10 ms) is imported inside the functions that use it, so
importing this module stays cheap.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path
from urllib.parse import urlsplit

from greenml.errors import ConfigError

ENV_VAR = "GREENML_DB"
DB_FILENAME = "greenml.db"

_SQLITE_SCHEMES = ("sqlite", "sqlite+pysqlite")
_POSTGRES_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")
_PG_DRIVER_SCHEME = "postgresql+psycopg"


def default_db_url() -> str:
    """The URL used when neither an argument nor ``GREENML_DB`` names one.

    Returns:
        ``sqlite:///<user data dir>/greenml.db`` (the directory is created on open).
    """
    import platformdirs

    return "sqlite:///" + str(Path(platformdirs.user_data_dir("greenml")) / DB_FILENAME)


def resolve_url(url: str | None = None) -> str:
    """Turn an explicit URL, ``GREENML_DB`` or the default into a SQLAlchemy URL.

    Args:
        url: ``sqlite:///path``, a filesystem path, ``postgresql://...`` or
            ``postgres://...``; ``None`` or empty to use the environment or default.

    Returns:
        A URL SQLAlchemy understands; PostgreSQL URLs use the psycopg 3 driver.

    Raises:
        ConfigError: Unknown scheme, or PostgreSQL without psycopg installed.
    """
    chosen = url or os.environ.get(ENV_VAR) or default_db_url()
    chosen = chosen.strip()
    if "://" not in chosen:
        return "sqlite:///" + str(Path(chosen).expanduser().absolute())
    scheme, rest = chosen.split("://", 1)
    scheme_l = scheme.lower()
    if scheme_l in _SQLITE_SCHEMES:
        return chosen
    if scheme_l in _POSTGRES_SCHEMES:
        if not _has_psycopg():
            raise ConfigError(
                f"PostgreSQL store {mask_url(chosen)} needs the psycopg driver: "
                "pip install 'greenml[postgres]'"
            )
        return f"{_PG_DRIVER_SCHEME}://{rest}"
    raise ConfigError(
        f"unsupported database URL scheme {scheme!r} in {mask_url(chosen)}: "
        "use sqlite:///path, a file path, or postgresql://..."
    )


def sqlite_path(url: str) -> Path | None:
    """The database file of a SQLite URL; ``None`` for in-memory or non-SQLite URLs."""
    scheme, _, rest = url.partition("://")
    if scheme.lower() not in _SQLITE_SCHEMES:
        return None
    path = rest[1:] if rest.startswith("/") else rest
    path = path.split("?", 1)[0]
    if not path or path == ":memory:" or path.startswith("file:"):
        return None
    return Path(path)


def mask_url(url: str) -> str:
    """The URL with any password replaced by ``***`` (safe to print)."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        password = None
    if password:
        url = url.replace(f":{password}@", ":***@", 1)
    return re.sub(r"(?i)(password=)[^&]*", r"\1***", url)


def without_password(url: str) -> str:
    """The URL with any password removed (``postgresql://u@host/db``): safe to write down.

    Two URLs of the same database with and without the password compare equal
    after this, so a spooled run finds its store whoever holds the password.
    """
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        password = None
    if password is not None:
        url = url.replace(f":{password}@", "@", 1)
    url = re.sub(r"(?i)([?&])password=[^&]*&?", r"\1", url)
    return url.rstrip("?&")


def _has_psycopg() -> bool:
    """Whether the psycopg 3 driver can be imported (without importing it)."""
    return importlib.util.find_spec("psycopg") is not None


def refuse_special_file(path: Path) -> None:
    """Refuse a store path that exists and is not a regular file (``--db /dev/null``).

    Raises:
        ConfigError: One line naming the path and what it is.
    """
    import stat

    try:
        mode = path.stat().st_mode
    except OSError:
        return  # nothing there (yet): the store creates it
    if stat.S_ISREG(mode):
        return
    kind = "a folder" if stat.S_ISDIR(mode) else "a device or special file"
    raise ConfigError(f"run store {path} is {kind}, not a database file: name a file (--db)")

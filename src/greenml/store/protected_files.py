"""Files no output option may overwrite: a run store, its SQLite side files, a ledger.

Every writing option (``-o``, ``--json-out``, ``--emit``'s file, ``runs export``,
``report``, ``ledger export``) goes through :func:`refuse_overwrite` before it
opens its file, whatever store the command itself was pointed at: the check reads
the target, so it holds for a store named by ``--db``, ``GREENML_DB``, the config
file or the default location alike.
"""

from __future__ import annotations

import json
from pathlib import Path

from greenml.errors import ConfigError

SQLITE_HEADER = b"SQLite format 3\x00"
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")
LEDGER_SUFFIX = ".ledger.jsonl"
_LEDGER_KEYS = {"seq", "prev_hash", "entry_hash"}


def protected_kind(path: Path) -> str | None:
    """What ``path`` is when it must not be overwritten (``None``: it may be)."""
    if _is_sqlite(path):
        return "a SQLite database (a run store?)"
    for suffix in SQLITE_SIDE_FILES:
        if path.name.endswith(suffix) and _is_sqlite(path.with_name(path.name[: -len(suffix)])):
            return f"the {suffix[1:]} file of a SQLite database"
    if path.name.endswith(LEDGER_SUFFIX) and path.exists():
        return "a run ledger"
    if _looks_like_ledger(path):
        return "a run ledger"
    return None


def refuse_overwrite(path: Path, option: str) -> None:
    """Raise when ``option`` would overwrite a store, its side files or a ledger.

    Raises:
        ConfigError: One line naming the option, the file and what it is.
    """
    kind = protected_kind(path)
    if kind is not None:
        raise ConfigError(f"{option} {path} is {kind}: writing it would destroy it")


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(16) == SQLITE_HEADER
    except OSError:
        return False


def _looks_like_ledger(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            first = handle.readline(65536)
    except OSError:
        return False
    try:
        entry = json.loads(first)
    except ValueError:
        return False
    return isinstance(entry, dict) and entry.keys() >= _LEDGER_KEYS

"""Move a PostgreSQL store's ledger from the name an earlier greenml gave it.

Before, the file was named after the URL as typed, so the same store got one
ledger when its URL carried a password and another when it did not (and
``verify`` then called the other file's runs removed). Now the name comes
from the database alone (:func:`greenml.ledger.paths.store_identity`); the
first use finds an old file and moves it there (a hard link, then the old name
is removed: a concurrent append still lands in the same file, and of two
processes moving at once one wins and neither overwrites). Where an earlier
greenml already split the ledger in two, the chain begun first is moved and a
note names the other, which is no longer appended to.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

log = logging.getLogger("greenml")
_noted: set[Path] = set()


def adopt_legacy(path: Path, candidates: list[Path]) -> Path:
    """The ledger to use: ``path``, after moving an old ledger of the store there.

    Args:
        path: The ledger's name now.
        candidates: The names an earlier greenml may have given it.

    Returns:
        ``path``; an old file's own name only where it cannot be moved (a note says so).
    """
    found = sorted(
        {c for c in candidates if c != path and c.is_file()}, key=lambda c: (_first_at(c), str(c))
    )
    if not found:
        return path
    if not path.exists():
        first = found[0]
        try:
            os.link(first, path)
        except FileExistsError:
            pass  # another process moved it (or began the new ledger) first
        except OSError as exc:
            _note(first, f"the ledger stays at {first}: it cannot be moved to {path}: {exc}")
            return first
        else:
            os.unlink(first)
            why = "its name no longer depends on the password or settings in the store's URL"
            _note(first, f"moved this store's ledger from {first} to {path}: {why}")
    for other in found:
        if other.exists():
            _note(other, f"an earlier greenml also kept a ledger of this store at {other} "
                  f"(its URL with or without a password); only {path} is appended to now: "
                  f"check the other with greenml ledger verify --ledger {other}")  # fmt: skip
    return path


def _first_at(path: Path) -> str:
    """When the ledger's first entry was appended (ISO text; ``"~"``: unknown, sorts last)."""
    try:
        with path.open(encoding="utf-8") as fh:
            at = json.loads(fh.readline()).get("appended_at")
    except (OSError, ValueError, AttributeError):
        return "~"
    return at if isinstance(at, str) else "~"


def _note(about: Path, message: str) -> None:
    """Say it once per process and file."""
    if about not in _noted:
        _noted.add(about)
        log.warning("greenml: %s", message)

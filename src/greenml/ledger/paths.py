"""Where a store's ledger lives, and where its signing key comes from.

Order: ``GREENML_LEDGER`` > next to the SQLite file (``runs.db`` →
``runs.ledger.jsonl``) > for PostgreSQL, ``ledgers/`` in the per-user data
directory, one file per server, database and options (the password is not
part of the name). An in-memory SQLite store has no ledger.

Lazy imports: platformdirs (~10 ms) is imported inside the functions that use it, so
importing this module stays cheap.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from urllib.parse import urlsplit

from greenml.store.url import mask_url, resolve_url, sqlite_path

LEDGER_ENV = "GREENML_LEDGER"
KEY_ENV = "GREENML_LEDGER_KEY"
SUFFIX = ".ledger.jsonl"


def ledger_path(db_url: str | None = None) -> Path | None:
    """The ledger file of a store; ``None`` for an in-memory SQLite store.

    Args:
        db_url: The store's URL or path (masked or not); ``None`` for
            ``GREENML_DB`` or the default store.

    Raises:
        ConfigError: The URL is not understood.
    """
    chosen = os.environ.get(LEDGER_ENV)
    if chosen:
        return Path(chosen).expanduser()

    url = resolve_url(db_url)
    if url.split("://", 1)[0].lower().startswith("sqlite"):
        db_file = sqlite_path(url)
        return None if db_file is None else db_file.with_name(db_file.stem + SUFFIX)
    import platformdirs

    masked = mask_url(url)
    parts = urlsplit(masked)
    label = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{parts.hostname or 'local'}-{parts.path[1:]}")
    digest = hashlib.sha256(masked.encode("utf-8")).hexdigest()[:12]
    folder = Path(platformdirs.user_data_dir("greenml")) / "ledgers"
    return folder / f"postgresql-{label}-{digest}{SUFFIX}"


def key_path_from_env() -> Path | None:
    """``GREENML_LEDGER_KEY``: the PEM private key that signs new entries, if set."""
    chosen = os.environ.get(KEY_ENV)
    return Path(chosen).expanduser() if chosen else None

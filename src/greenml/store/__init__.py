"""The run store: runs, windows and samples in SQLite (default) or PostgreSQL.

Importing this package is cheap: SQLAlchemy is imported only when a store is
opened::

    from greenml.store import open_store
    with open_store() as store:
        print(store.list_runs(limit=5))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports
from greenml.store.ids import new_run_id
from greenml.store.url import default_db_url

if TYPE_CHECKING:
    from greenml.store.repository import Store

__all__ = ["Store", "default_db_url", "new_run_id", "open_store"]


def open_store(url: str | None = None) -> Store:
    """Open (and create if needed) the run store.

    Args:
        url: ``sqlite:///path``, a file path, or ``postgresql://...``; ``None`` for
            ``GREENML_DB`` or the default SQLite file in the per-user data directory.

    Raises:
        ConfigError: The URL is not understood, or psycopg is missing for PostgreSQL.
        StoreError: The database cannot be opened.
    """
    from greenml.store.repository import Store  # lazy: SQLAlchemy costs ~0.1 s at import

    return Store(url)


__getattr__ = lazy_exports(__name__, {"Store": "greenml.store.repository"})

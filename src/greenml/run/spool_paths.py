"""Where runs wait (the spool folder) and what a waiting file may say of its store.

Shared by the spool of runs waiting for the local store (:mod:`greenml.run.spool`)
and the markers of runs waiting for a team server (:mod:`greenml.run.upload`).

Lazy imports: platformdirs, only when the default folder is asked for.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from greenml.store.url import without_password

SPOOL_ENV = "GREENML_SPOOL_DIR"


def spool_dir() -> Path:
    """``$GREENML_SPOOL_DIR``, or ``spool/`` in the per-user data directory."""
    chosen = os.environ.get(SPOOL_ENV)
    if chosen:
        return Path(chosen)
    import platformdirs

    return Path(platformdirs.user_data_dir("greenml")) / "spool"


def public_url(url: str) -> str:
    """``url`` without its password: what a spool file may hold."""
    return without_password(url)


def private_folder(folder: Path) -> None:
    """Create ``folder`` (and its parents) for this user only (0700)."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        os.chmod(folder, 0o700)

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


def uploads_dir() -> Path:
    """Where markers of runs waiting for the team server are kept."""
    return spool_dir() / "uploads"


def uploads_waiting() -> bool:
    """Whether any run waits for the team server: one directory listing, no other import."""
    try:
        with os.scandir(uploads_dir()) as entries:
            return any(e.name.endswith(".json") for e in entries)
    except OSError:
        return False


def public_url(url: str) -> str:
    """``url`` without its password: what a spool file may hold."""
    return without_password(url)


def private_folder(folder: Path) -> None:
    """Create ``folder`` (and its parents) for this user only (0700).

    Raises:
        PermissionError: ``folder`` exists but is not this user's own, or is a link:
            another local user may have made it to plant runs (never chmod it).
    """
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    why = untrusted_folder(folder, exact_private=False)
    if why is not None:
        raise PermissionError(1, why)
    with contextlib.suppress(OSError):
        os.chmod(folder, 0o700)


def untrusted_folder(folder: Path, *, exact_private: bool) -> str | None:
    """Why ``folder`` cannot be trusted to hold this user's runs, or ``None`` if it can.

    A folder is trusted when it is a real folder (not a link), owned by this user, and
    writable by no one else (``exact_private``: mode exactly 0700, for a folder in a
    shared temp dir that anyone could have made first).
    """
    try:
        info = folder.lstat()
    except OSError as exc:
        return f"{folder}: {exc.strerror or exc}"
    import stat

    if not stat.S_ISDIR(info.st_mode):
        return f"{folder} is not a folder (a link?)"
    if info.st_uid != os.getuid():
        return f"{folder} belongs to uid {info.st_uid}, not to you"
    mode = stat.S_IMODE(info.st_mode)
    if (exact_private and mode & 0o077) or mode & 0o022:
        return f"{folder} is open to other users (mode {mode:o})"
    return None


def owned_file(path: Path) -> bool:
    """Whether ``path`` is a regular file (not a link) owned by this user."""
    import stat

    try:
        info = path.lstat()
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid()

"""Checks made before the command starts: after that, greenml may only warn.

Everything a run will need to store is checked here, cheaply, so that a bad
input is one line and exit code 2 *before* the user's command runs, never a
traceback after it: the database file can be created and written (or a server
URL is well formed), the ``--json-out`` file can be written and is not the
database, the run's name and tags are text the store can hold, and the
environment variables greenml reads are sane numbers.

Lazy imports: the store URL helpers and the CPU model's constant, when checked.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Mapping
from pathlib import Path

from greenml.errors import ConfigError
from greenml.quantities import bounds

MAX_NAME_CHARS = 255
"""The ``runs.name`` column of the store (VARCHAR(255) on PostgreSQL)."""
MAX_TDP_W = bounds.MAX_TDP_W

log = logging.getLogger("greenml")
_INPUT_ERRNOS = frozenset(
    {errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.EPERM, errno.EROFS, errno.ENAMETOOLONG,
     errno.ELOOP, errno.EISDIR, errno.EINVAL}
)  # fmt: skip
"""Why a file cannot be made that is the path's fault, not the moment's."""


def check_run_inputs(
    *, name: str | None, tags: Mapping[str, str], db_url: str | None, json_out: Path | None,
    env: Mapping[str, str] | None = None,
) -> None:  # fmt: skip
    """Refuse, before the command starts, what the run could not store.

    Raises:
        ConfigError: One clear reason.
    """
    if name is not None:
        _storable_text(name, "--name")
        if len(name) > MAX_NAME_CHARS:
            raise ConfigError(f"--name is {len(name)} characters long; at most {MAX_NAME_CHARS}")
    for key, value in tags.items():
        _storable_text(key, f"tag key {key!r}")
        _storable_text(value, f"tag {key!r}")
    db_file = check_store_path(db_url)
    if json_out is not None:
        check_output_file(json_out, "--json-out", not_same_as=db_file)
    check_tdp_env(os.environ if env is None else env)


def storable_arg(arg: str) -> str:
    """A command-line argument as the store keeps it: bytes that are not UTF-8 (which
    Python carries as surrogates) are written as ``\\xff`` escapes. The command itself
    gets its arguments untouched."""
    return arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def check_store_path(db_url: str | None) -> Path | None:
    """The SQLite file of ``db_url``, checked usable (if missing: that its folder can hold
    it, the folders made); ``None`` for a server database (checked when it is opened,
    while the command runs). Safe for many processes starting at once on a new store.

    Raises:
        ConfigError: A folder, an unreadable or non-SQLite file, or a place where no
            file can be created.
    """
    from greenml.store.url import resolve_url, sqlite_path

    path = sqlite_path(resolve_url(db_url))
    if path is None:
        return None
    if path.is_dir():
        raise ConfigError(f"database {path} is a folder: give a file path, e.g. {path}/runs.db")
    try:
        with path.open("rb") as handle:
            header = handle.read(16)
    except FileNotFoundError:
        _probe_folder(path, f"cannot create database {path}")  # a new store
        return path
    except PermissionError:
        raise ConfigError(f"database {path} is not readable and writable") from None
    except OSError as exc:
        raise ConfigError(f"database {path} cannot be read: {exc.strerror}") from None
    if not os.access(path, os.W_OK):
        raise ConfigError(f"database {path} is not readable and writable")
    if header and header != b"SQLite format 3\x00":
        raise ConfigError(f"database {path} is not a SQLite database (corrupt or another file)")
    return path


def check_output_file(path: Path, option: str, *, not_same_as: Path | None = None) -> None:
    """``path`` can be written (its folder exists), is not a folder, and is not the store.

    Raises:
        ConfigError: Which of those fails.
    """
    if not_same_as is not None and _same_file(path, not_same_as):
        raise ConfigError(f"{option} {path} is the run store itself: writing it would destroy it")
    from greenml.store.protected_files import refuse_overwrite

    refuse_overwrite(path, option)
    if path.is_dir():
        raise ConfigError(f"{option} {path} is a folder")
    if not path.parent.is_dir():
        raise ConfigError(f"{option}: the folder of {path} does not exist")
    if path.exists():
        if not os.access(path, os.W_OK):
            raise ConfigError(f"{option} {path} is not writable")
        return
    _probe_create(path, f"{option}: cannot write {path}", make_parents=False)


def check_tdp_env(env: Mapping[str, str]) -> None:
    """``GREENML_CPU_TDP_W``, when set, is a number of watts in (0, 10 000].

    Raises:
        ConfigError: Not a number, NaN, infinite, zero, negative or absurdly large.
    """
    from greenml.measure.sensors.cpu_model import TDP_ENV

    text = env.get(TDP_ENV, "").strip()
    if text:
        bounds.tdp_w(text, TDP_ENV)


def _storable_text(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(f"{what} is not valid UTF-8 text: the store cannot hold it") from None
    if "\x00" in text:
        raise ConfigError(f"{what} contains a NUL character")


def _probe_create(path: Path, message: str, *, make_parents: bool = True) -> None:
    """Create ``path`` (and, for a store, its folders) and remove it again."""
    try:
        if make_parents:
            path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise ConfigError(f"{message}: {exc.strerror or exc}") from None
    os.close(fd)
    path.unlink(missing_ok=True)


def _probe_folder(path: Path, message: str) -> None:
    """A file can be made beside ``path`` (its folders created): a store can be created there.

    The probe has a name of its own, never ``path``: processes starting at once on a new
    store neither trip on each other's probe nor remove the store one of them made.
    A refusal that is the input's (no such place, no permission, read-only) is a
    ConfigError; one of the moment (disk full, I/O) only warns: the command runs and
    its run waits in the spool.
    """
    import tempfile

    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # as the store makes it
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.probe-", dir=path.parent)
    except OSError as exc:
        if exc.errno not in _INPUT_ERRNOS:
            log.warning("greenml: %s now (%s): the command runs; its run is kept in the spool "
                        "until the store can be written", message, exc.strerror or exc)  # fmt: skip
            return
        raise ConfigError(f"{message}: {exc.strerror or exc}") from None
    os.close(fd)
    os.unlink(probe)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and a.samefile(b))
    except OSError:
        return False

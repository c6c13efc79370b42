"""Runs written to a spool file when the store could not take them in time.

A spool file is a :class:`~greenml.run.persist.FinishedRun` as JSON, plus the
``db_url`` it is meant for, **without its password**: the detached writer gets
the full URL in its environment (private to the user), and a reader brings its
own. Folders are 0700 and files 0600.

A command that ends before the store is open (SQLAlchemy takes ~0.3 s to
import) should not wait for it, and a store that is down should not lose a
run. Such a run is written atomically to ``<user data dir>/spool/<id>.json``
(or, when that disk is full or unwritable, to a private folder in the temp
dir, said loudly) and a detached ``python -m greenml.run.spool FILE`` stores
it. Readers (``greenml runs ...``) ingest whatever is still pending for their
database first, so a run is visible as soon as ``greenml run`` has returned.

A file is claimed with an exclusive ``flock`` on it, then renamed to
``<id>.json.<pid>.claim``: a claim whose lock can be taken belongs to a
process that is gone (whatever its pid now names), and is taken over. A file
the store refuses (its data, not an outage) is moved to ``quarantine/`` with
the reason beside it and reported once: it never blocks the other runs.
Importing this module does not import SQLAlchemy.

Lazy imports: platformdirs, and the persist path (the record types), when first used.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from greenml.errors import GreenmlError, StoreError
from greenml.run.spool_paths import SPOOL_ENV as SPOOL_ENV  # re-exported: tests and users set it
from greenml.run.spool_paths import (
    owned_file,
    private_folder,
    public_url,
    spool_dir,
    untrusted_folder,
)
from greenml.store.url import resolve_url

if TYPE_CHECKING:
    from greenml.store.repository import Store

URL_ENV = "GREENML_SPOOL_DB_URL"
"""The full database URL, handed to the detached writer in its environment only."""
QUARANTINE = "quarantine"
_CLAIM = ".claim"
log = logging.getLogger("greenml")


def fallback_spool_dir() -> Path:
    """A private spool for when the usual one cannot be written.

    ``$XDG_RUNTIME_DIR/greenml-spool`` where the session has a runtime folder (made by
    the system, this user's own, mode 0700: no one else can make it first); else
    ``greenml-spool-<uid>`` in the temp dir, used only while it is this user's and mode
    0700 (:func:`~greenml.run.spool_paths.untrusted_folder`).
    """
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and untrusted_folder(Path(runtime), exact_private=True) is None:
        return Path(runtime) / "greenml-spool"
    return Path(tempfile.gettempdir()) / f"greenml-spool-{os.getuid()}"


def spool_dirs() -> list[Path]:
    """Where pending runs may wait: the spool, then the fallback."""
    return [spool_dir(), fallback_spool_dir()]


def write_spool(payload: dict[str, Any]) -> Path:
    """Write a run payload atomically (temporary file, fsync, rename), privately.

    Tries the spool, then the fallback in the temp dir (with a warning); a
    failed attempt leaves no file behind.

    Raises:
        StoreError: Neither place could take it (both reasons given).
    """
    safe = {**payload, "db_url": public_url(str(payload["db_url"]))}
    reasons = []
    for number, folder in enumerate(spool_dirs()):
        try:
            path = _write_atomically(folder, f"{safe['run']['run_id']}.json", safe)
        except OSError as exc:
            reasons.append(f"{folder}: {exc.strerror or exc}")
            continue
        if number:
            log.warning("greenml: the spool %s could not be written (%s); the run waits in %s",
                        spool_dir(), reasons[0], path)  # fmt: skip
        return path
    raise StoreError(f"cannot write the run to a spool: {'; '.join(reasons)}")


def _write_atomically(folder: Path, name: str, payload: dict[str, Any]) -> Path:
    private_folder(folder)
    final = folder / name
    tmp = folder / f".{name}.tmp{os.getpid()}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, allow_nan=False)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, final)
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            tmp.unlink()  # never a partial file
        raise
    return final


def start_ingester(path: Path, db_url: str) -> None:
    """Store a spooled run from a detached process that outlives this one."""
    subprocess.Popen(
        [sys.executable, "-m", "greenml.run.spool", str(path)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True, env={**os.environ, URL_ENV: db_url},
    )  # fmt: skip


def ingest_pending(store: Store, db_url: str, wait_s: float = 10.0) -> int:
    """Store every spooled run meant for ``db_url``; wait for ones being stored elsewhere.

    A file the store refuses is quarantined (see :func:`quarantine`); an outage
    of the store itself raises, and leaves the files for later.

    Returns:
        How many runs this call stored.

    Raises:
        StoreError: The store does not answer.
    """
    target = public_url(resolve_url(db_url or None))
    stored = 0
    deadline = time.monotonic() + wait_s
    while True:
        busy = False
        for path in _pending(target):
            with claimed_file(path) as claimed:
                if claimed is None:
                    busy = True  # a live process is storing it right now
                    continue
                if ingest_claimed(store, claimed):
                    stored += 1
        if not busy or time.monotonic() > deadline:
            return stored
        time.sleep(0.05)


def has_pending(db_url: str) -> bool:
    """Whether runs wait in the spool for ``db_url`` (``""``: the default store)."""
    return bool(_pending(public_url(resolve_url(db_url or None))))


def _pending(target: str) -> list[Path]:
    found = []
    for number, folder in enumerate(spool_dirs()):
        if not folder.is_dir():
            continue
        why = untrusted_folder(folder, exact_private=number > 0)
        if why is not None:
            _warn_untrusted(why)
            continue
        found += [p for p in sorted(folder.iterdir())
                  if _is_spool_file(p) and _target_of(p) == target]  # fmt: skip
    return found


_warned_untrusted: set[str] = set()


def _warn_untrusted(why: str) -> None:
    if why not in _warned_untrusted:
        _warned_untrusted.add(why)
        log.warning("greenml: spool not read: %s", why)


@contextlib.contextmanager
def claimed_file(path: Path) -> Iterator[Path | None]:
    """Hold ``path`` (a spool file, or a dead process's claim on one) under an exclusive
    lock, renamed to this process's claim; ``None`` when a live process holds it."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        yield None  # someone else took it first
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        mine = path.with_name(f"{_base(path)}.{os.getpid()}{_CLAIM}")
        try:
            os.rename(path, mine)
        except FileNotFoundError:
            yield None  # stored and removed between our open and our lock
            return
        yield mine
    finally:
        os.close(fd)


def ingest_claimed(store: Store, claimed: Path) -> bool:
    """Store one claimed file and delete it; quarantine it when the store refuses its data.

    Returns:
        True when the run was stored.

    Raises:
        StoreError: The store itself does not answer: the file is given back.
    """
    try:
        payload = json.loads(claimed.read_text(encoding="utf-8"))
        ingest(store, payload)
    except Exception as exc:
        if not _environmental(exc) and _store_answers(store):
            quarantine(claimed, exc)
            return False
        _release(claimed)
        raise StoreError(f"spooled run {_base(claimed)} not stored: {exc}") from exc
    claimed.unlink(missing_ok=True)
    return True


def quarantine(claimed: Path, exc: BaseException) -> Path:
    """Move a spool file the store refuses aside, with the reason; warn once per file."""
    folder = claimed.parent / QUARANTINE
    private_folder(folder)
    target = folder / _base(claimed)
    os.replace(claimed, target)
    reason = f"{type(exc).__name__}: {exc}"
    target.with_suffix(".reason.txt").write_text(reason + "\n", encoding="utf-8")
    log.warning("greenml: spooled run %s cannot be stored (%s); moved to %s",
                _base(claimed), reason.splitlines()[0][:300], target)  # fmt: skip
    return target


def ingest(store: Store, payload: dict[str, Any]) -> str:
    """Store one spooled run (see :func:`greenml.run.persist.persist_run`); its id."""
    from greenml.run.persist import FinishedRun, persist_run

    finished = FinishedRun.from_dict(payload)
    persist_run(store, finished)  # never raises after the run is stored: the ledger only warns
    return finished.run_id


_OUTAGE_WORDS = ("disk is full", "no space left", "disk i/o", "readonly", "read-only",
                 "database is locked", "out of memory", "could not extend")  # fmt: skip


def _environmental(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is the machine's fault, not the file's.

    A full disk, an I/O error, a read-only or locked database: the store answers
    reads, yet the write fails. Such a run is given back to wait, never quarantined
    as bad data.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError):
            return True
        if type(current).__name__ == "OperationalError":  # sqlalchemy / sqlite3 / psycopg
            return True
        if any(word in str(current).lower() for word in _OUTAGE_WORDS):
            return True
        current = current.__cause__ or current.__context__
    return False


def _store_answers(store: Store) -> bool:
    """Whether the store works (then a failure was the file's, not an outage)."""
    try:
        store.list_runs(limit=1)
    except Exception:
        return False
    return True


def _is_spool_file(path: Path) -> bool:
    """A spool file of this user's: a planted file of another user's is never read."""
    named = path.name.endswith(".json") or path.name.endswith(_CLAIM)
    return named and owned_file(path)


def _target_of(path: Path) -> str | None:
    try:
        return public_url(str(json.loads(path.read_text(encoding="utf-8"))["db_url"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _base(path: Path) -> str:
    """``<id>.json`` of a spool file or of a claim on one (``<id>.json.<pid>.claim``)."""
    if not path.name.endswith(_CLAIM):
        return path.name
    return path.name[: -len(_CLAIM)].rsplit(".", 1)[0]


def _release(claimed: Path) -> None:
    with contextlib.suppress(OSError):
        os.rename(claimed, claimed.with_name(_base(claimed)))


def main(argv: list[str] | None = None) -> int:
    """``python -m greenml.run.spool FILE``: store one spooled run (the detached writer)."""
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0])
    with claimed_file(path) as claimed:
        if claimed is None:
            return 0  # a reader took it first
        try:
            payload = json.loads(claimed.read_text(encoding="utf-8"))
            from greenml.store import open_store

            with open_store(os.environ.get(URL_ENV) or payload["db_url"]) as store:
                ingest_claimed(store, claimed)
        except (GreenmlError, OSError, ValueError, KeyError) as exc:
            _release(claimed)
            print(f"greenml: spooled run {path.name} not stored yet: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

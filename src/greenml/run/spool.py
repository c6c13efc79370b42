"""Runs written to a spool file when the store could not take them in time.

A spool file is a :class:`~greenml.run.persist.FinishedRun` as JSON, plus the
``db_url`` it is meant for.

A command that ends before the store is open (SQLAlchemy takes ~0.3 s to
import) should not wait for it, and a store that is down should not lose a
run. Such a run is written atomically to ``<user data dir>/spool/<id>.json``
and a detached ``python -m greenml.run.spool FILE`` stores it. Readers
(``greenml runs ...``) ingest whatever is still pending for their database
first, so a run is visible as soon as ``greenml run`` has returned.

A file is claimed by renaming it to ``<id>.json.<pid>.claim``; a claim whose
process is gone is taken over. Importing this module does not import SQLAlchemy.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from greenml.errors import GreenmlError, StoreError

if TYPE_CHECKING:
    from greenml.store.repository import Store

SPOOL_ENV = "GREENML_SPOOL_DIR"
_CLAIM = ".claim"


def spool_dir() -> Path:
    """``$GREENML_SPOOL_DIR``, or ``spool/`` in the per-user data directory."""
    chosen = os.environ.get(SPOOL_ENV)
    if chosen:
        return Path(chosen)
    import platformdirs

    return Path(platformdirs.user_data_dir("greenml")) / "spool"


def write_spool(payload: dict[str, Any]) -> Path:
    """Write a run payload atomically (temporary file, fsync, rename)."""
    folder = spool_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        final = folder / f"{payload['run']['run_id']}.json"
        tmp = final.with_suffix(f".tmp{os.getpid()}")
        with tmp.open("w", encoding="utf-8") as handle:
            json.dump(payload, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, final)
    except OSError as exc:
        raise StoreError(f"cannot write the run to the spool {folder}: {exc.strerror}") from exc
    return final


def start_ingester(path: Path) -> None:
    """Store a spooled run from a detached process that outlives this one."""
    subprocess.Popen(
        [sys.executable, "-m", "greenml.run.spool", str(path)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True,
    )  # fmt: skip


def ingest_pending(store: Store, db_url: str, wait_s: float = 10.0) -> int:
    """Store every spooled run meant for ``db_url``; wait for ones being stored elsewhere.

    Returns:
        How many runs this call stored.
    """
    from greenml.store.url import resolve_url

    target = resolve_url(db_url or None)
    folder = spool_dir()
    if not folder.is_dir():
        return 0
    stored = 0
    deadline = time.monotonic() + wait_s
    while True:
        busy = False
        for path in sorted(folder.iterdir()):
            if not _is_spool_file(path) or _target_of(path) != target:
                continue
            claimed = claim(path)
            if claimed is None:
                busy = True  # a live process is storing it right now
                continue
            ingest_file(store, claimed)
            stored += 1
        if not busy or time.monotonic() > deadline:
            return stored
        time.sleep(0.05)


def claim(path: Path) -> Path | None:
    """Take a spool file (or a dead process's claim on one); ``None`` if a live one holds it."""
    if path.name.endswith(_CLAIM):
        holder = int(path.name.rsplit(".", 2)[-2])
        if _alive(holder):
            return None
        base = path.name[: -len(_CLAIM)].rsplit(".", 1)[0]
    else:
        base = path.name
    mine = path.with_name(f"{base}.{os.getpid()}{_CLAIM}")
    try:
        os.rename(path, mine)
    except FileNotFoundError:
        return None  # someone else took it first
    return mine


def ingest_file(store: Store, claimed: Path) -> None:
    """Store one claimed spool file, then delete it; on failure give it back."""
    try:
        payload = json.loads(claimed.read_text(encoding="utf-8"))
        ingest(store, payload)
    except (GreenmlError, OSError, ValueError, KeyError):
        _release(claimed)
        raise
    claimed.unlink(missing_ok=True)


def ingest(store: Store, payload: dict[str, Any]) -> str:
    """Store one spooled run (see :func:`greenml.run.persist.persist_run`); its id."""
    from greenml.run.persist import FinishedRun, persist_run

    finished = FinishedRun.from_dict(payload)
    persist_run(store, finished)  # never raises after the run is stored: the ledger only warns
    return finished.run_id


def _is_spool_file(path: Path) -> bool:
    return path.name.endswith(".json") or path.name.endswith(_CLAIM)


def _target_of(path: Path) -> str | None:
    try:
        return str(json.loads(path.read_text(encoding="utf-8"))["db_url"])
    except (OSError, ValueError, KeyError):
        return None


def _release(claimed: Path) -> None:
    base = claimed.name[: -len(_CLAIM)].rsplit(".", 1)[0]
    with contextlib.suppress(OSError):
        os.rename(claimed, claimed.with_name(base))


def _alive(pid: int) -> bool:
    from greenml.store.record import pid_alive

    return pid_alive(pid)


def main(argv: list[str] | None = None) -> int:
    """``python -m greenml.run.spool FILE``: store one spooled run (the detached writer)."""
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0])
    claimed = claim(path)
    if claimed is None:
        return 0  # a reader took it first
    try:
        payload = json.loads(claimed.read_text(encoding="utf-8"))
        from greenml.store import open_store

        with open_store(payload["db_url"]) as store:
            ingest_file(store, claimed)
    except (GreenmlError, OSError, ValueError, KeyError) as exc:
        _release(claimed)
        print(f"greenml: spooled run {path.name} not stored yet: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

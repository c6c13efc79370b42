"""Send finished runs to a team server; keep the ones it did not take for later.

:func:`upload_after_persist` runs right after :func:`greenml.run.persist.persist_run`
stored a run locally (every writer goes through it: ``greenml run``, the spool's
detached writer, the Python run API). The run is sent as one document
(:func:`greenml.store.transfer.export_run`). When the server cannot be reached
or answers 5xx, a small marker ``<spool>/uploads/<run id>.json`` (the run id,
the server URL and the local store, never the token) says the run waits; the
run itself is already in the local store, so nothing can be lost. The next
greenml command, or ``greenml push``, sends what waits. The server stores a
run id once (a repeated upload answers 200 and writes nothing), so a run sent
again after a lost answer is never stored twice.

A run the server refuses (4xx: bad token, wrong project …) is not retried:
its marker moves to ``uploads/refused/`` with the reason, said once.
greenml never fails the user's command over an upload.

Lazy imports: httpx (in :mod:`greenml.client`) and the store's export, only when a
run is sent.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from greenml.client import TeamClient
from greenml.errors import GreenmlError, UploadError
from greenml.run.server_settings import ServerSettings, server_settings
from greenml.run.spool_paths import private_folder, public_url, uploads_dir

if TYPE_CHECKING:
    from greenml.ledger.entry import Entry
    from greenml.run.persist import StoredRun
    from greenml.store.repository import Store

log = logging.getLogger("greenml")
REFUSED = "refused"
RETRY_EVERY_S = 60.0
"""At most one quiet try a minute from command starts while the server is unreachable."""


def upload_after_persist(store: Store, run_id: str, entry: Entry | None) -> str | None:
    """Send a stored run to the configured server (read from the store), or mark it as
    waiting; what happened in a few words (``None``: no server). Never raises."""
    ledger_entry = asdict(entry) if entry is not None else None
    return _deliver(store, run_id, ledger_entry,
                    lambda: _document(store, run_id, ledger_entry))  # fmt: skip


def upload_stored(store: Store, stored: StoredRun) -> str | None:
    """The team-server sink: send a run just stored, its upload built from the record,
    windows and samples in hand (the samples are read once when not all are in memory);
    what happened in a few words (``None``: no server). Never raises."""
    ledger_entry = asdict(stored.entry) if stored.entry is not None else None

    def document() -> dict[str, Any]:
        from greenml.store.transfer import series_of, stored_series, upload_document

        run_id = stored.record.id
        series = series_of(stored.samples) if stored.samples is not None else stored_series(
            store, run_id)  # fmt: skip
        return upload_document(stored.record.to_dict(), stored.windows, series, ledger_entry,
                               _user())  # fmt: skip

    return _deliver(store, stored.record.id, ledger_entry, document)


def _deliver(
    store: Store, run_id: str, ledger_entry: dict[str, Any] | None,
    document: Callable[[], dict[str, Any]],
) -> str | None:  # fmt: skip
    try:
        settings = server_settings()
    except GreenmlError as exc:
        log.warning("greenml: run %s not sent to a server: %s", run_id, exc)
        return f"not sent to a server: {exc}"
    if settings is None:
        return None
    try:
        post_document(document(), settings)
    except UploadError as exc:
        _mark(run_id, settings, store, ledger_entry, str(exc), refused=not exc.retry)
        return f"{'refused by' if not exc.retry else 'not sent yet to'} {settings.url}"
    except Exception as exc:  # the run is stored locally: an upload never costs the user
        _mark(run_id, settings, store, ledger_entry, f"{type(exc).__name__}: {exc}", refused=False)
        return f"not sent yet to {settings.url}"
    if pending_markers():  # the server answers again: send what waited for it
        with contextlib.suppress(Exception):
            push_pending(store, settings)
    return f"sent to {settings.url}"


def send_run(
    store: Store, run_id: str, settings: ServerSettings, ledger_entry: dict[str, Any] | None
) -> bool:
    """Upload one stored run; True when the server stored it now, False when it had it.

    Raises:
        UploadError: No token, the server is unreachable or answered 5xx (``retry``),
            or it refused the run (4xx, ``retry`` False).
    """
    return post_document(_document(store, run_id, ledger_entry), settings)


def _document(store: Store, run_id: str, ledger_entry: dict[str, Any] | None) -> dict[str, Any]:
    from greenml.store.transfer import export_run

    return export_run(store, run_id, ledger_entry=ledger_entry, user=_user())


def post_document(document: dict[str, Any], settings: ServerSettings) -> bool:
    """Upload one run's document; True when the server stored it now, False when it had it.

    Raises:
        UploadError: As :func:`send_run`.
    """
    if not settings.token:
        raise UploadError(f"no token for {settings.url}: set GREENML_TOKEN or [server] token",
                          retry=False)  # fmt: skip
    body = json.dumps(document, allow_nan=False, separators=(",", ":")).encode()
    return TeamClient(settings, UploadError).post_json("/api/v1/runs", body) == 201


def push_pending(store: Store, settings: ServerSettings) -> tuple[int, int, list[str]]:
    """Send every run waiting for ``settings.url`` from ``store``: (sent, still waiting, errors).

    A run refused by the server moves to ``uploads/refused/`` and counts as an error.
    """
    sent, waiting, errors = 0, 0, []
    target = public_url(store.url)
    for path in pending_markers():
        marker = _read(path)
        if marker is None or marker.get("server") != settings.url or marker.get("db") != target:
            continue
        try:
            send_run(store, str(marker["run_id"]), settings, marker.get("ledger_entry"))
        except UploadError as exc:
            errors.append(f"run {marker['run_id']}: {exc}")
            if exc.retry:
                waiting += 1
            else:
                _refuse(path, str(exc))
            continue
        except GreenmlError as exc:  # the run is gone from the local store
            errors.append(f"run {marker['run_id']}: {exc}")
            _refuse(path, str(exc))
            continue
        path.unlink(missing_ok=True)
        sent += 1
    return sent, waiting, errors


def pending_markers() -> list[Path]:
    """Markers of runs waiting for a server, oldest first."""
    folder = uploads_dir()
    try:
        found = [p for p in folder.iterdir() if p.suffix == ".json" and p.is_file()]
    except OSError:
        return []
    return sorted(found, key=lambda p: p.stat().st_mtime)


def flush_pending(db_url: str | None = None) -> None:
    """At the start of a greenml command: send what waits for the configured server, quietly.

    Costs one directory listing when nothing waits, and is tried at most once a
    minute while the server stays unreachable (a command never waits on it each time).
    Never raises.
    """
    if not pending_markers():
        return
    stamp = uploads_dir() / ".last-try"
    with contextlib.suppress(OSError):
        if time.time() - stamp.stat().st_mtime < RETRY_EVERY_S:
            return
    with contextlib.suppress(OSError):
        stamp.touch()
    try:
        settings = server_settings()
        if settings is None or not settings.token:
            return
        from greenml.store import open_store

        with open_store(db_url) as store:
            sent, _, _ = push_pending(store, settings)
        if sent:
            log.warning("greenml: %d waiting run(s) sent to %s", sent, settings.url)
    except Exception as exc:
        log.debug("greenml: waiting runs not sent: %s", exc)


def _mark(run_id: str, settings: ServerSettings, store: Store, entry: dict[str, Any] | None,
          reason: str, *, refused: bool) -> None:  # fmt: skip
    folder = uploads_dir() / (REFUSED if refused else "")
    marker = {"run_id": run_id, "server": settings.url, "db": public_url(store.url),
              "ledger_entry": entry, "reason": reason}  # fmt: skip
    try:
        private_folder(folder)
        tmp = folder / f".{run_id}.json.tmp{os.getpid()}"
        tmp.write_text(json.dumps(marker), encoding="utf-8")
        os.replace(tmp, folder / f"{run_id}.json")
    except OSError as exc:
        log.warning("greenml: run %s not sent (%s) and its marker not written (%s); it is "
                    "stored locally", run_id, reason, exc)  # fmt: skip
        return
    if refused:
        log.warning("greenml: run %s refused by %s: %s", run_id, settings.url, reason)
    else:
        log.warning("greenml: run %s not sent yet (%s); it is stored locally and goes up at the "
                    "next greenml command or `greenml push`", run_id, reason)  # fmt: skip


def _refuse(path: Path, reason: str) -> None:
    folder = path.parent / REFUSED
    with contextlib.suppress(OSError):
        private_folder(folder)
        marker = _read(path) or {}
        marker["reason"] = reason
        (folder / path.name).write_text(json.dumps(marker), encoding="utf-8")
        path.unlink()


def _read(path: Path) -> dict[str, Any] | None:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) and "run_id" in found else None


def _user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None

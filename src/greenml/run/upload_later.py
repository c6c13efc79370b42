"""A finished run's upload handed to a detached sender, so that ``greenml run`` returns at once.

Sending a run to a team server costs more than most short commands (httpx, the
record's document, a round trip: 1–2 s here), and a slow or unreachable server
would hold the user's shell for its timeouts. Where the machine outlives greenml,
the run is therefore stored locally first, as always, and its upload is left to a
detached ``python -m greenml.run.upload_later`` that sends what waits
(:func:`greenml.run.upload.push_pending`).

Never lost: before the sender starts, a marker ``<spool>/uploads/<run id>.json``
records that the run waits for the server (the same marker a failed upload leaves),
so a sender that dies, or a server that is down, leaves the run to the next greenml
command or ``greenml push``. The server stores a run id once, so two senders of one
run store it once.

Where greenml's end may end the machine or the job with it — CI (``CI``), a Slurm
job (``SLURM_JOB_ID``: the step's processes are killed at its end), a Kubernetes
pod, a container's first process — a detached sender may die with them and the
spool with the machine: there the upload is done before greenml returns (the cost:
the upload's time, said in the benchmark).

Lazy imports: the store and the upload, only when a run is sent.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from typing import TYPE_CHECKING

from greenml.errors import GreenmlError

if TYPE_CHECKING:
    from greenml.run.persist import StoredRun
    from greenml.store.repository import Store

log = logging.getLogger("greenml")
EPHEMERAL_ENV = ("CI", "SLURM_JOB_ID", "KUBERNETES_SERVICE_HOST")
"""Set where the machine or the job may end with greenml (a detached sender with it)."""
URL_ENV = "GREENML_UPLOAD_DB_URL"
"""The full local store URL (with its password), handed to the sender in its environment."""
REASON = "handed to a detached sender when greenml run ended"


def upload_in_background() -> bool:
    """Whether a run's upload may be left to a detached sender (see the module's doc)."""
    if os.getpid() == 1:
        return False
    return not any(os.environ.get(name, "").strip().lower() not in ("", "0", "false")
                   for name in EPHEMERAL_ENV)  # fmt: skip


def send_or_hand_off(store: Store, stored: StoredRun, db_url: str | None) -> str | None:
    """The team-server sink of a run just stored in ``store`` (opened from ``db_url``): sent
    here where the machine may end with greenml, else marked as waiting and handed to a
    detached sender; what happened in a few words (``None``: no server). Never raises."""
    from greenml.run.upload import upload_stored

    if not upload_in_background():
        return upload_stored(store, stored)
    from greenml.run.server_settings import server_settings

    try:
        settings = server_settings()
    except GreenmlError:
        return upload_stored(store, stored)  # says why, once, as it always did
    if settings is None:
        return None
    if not settings.token:
        return upload_stored(store, stored)  # refused at once, with the reason
    run_id = stored.record.id
    if not mark_waiting(run_id, settings.url, str(store.url), stored):
        return upload_stored(store, stored)
    try:
        from greenml.store.url import resolve_url

        start_sender(resolve_url(db_url))
    except (OSError, GreenmlError) as exc:
        log.warning("greenml: run %s waits for %s (no sender started: %s); it goes up at "
                    "the next greenml command or `greenml push`", run_id, settings.url,
                    exc)  # fmt: skip
        return f"not sent yet to {settings.url}"
    return f"being sent to {settings.url}"


def mark_waiting(run_id: str, server_url: str, db_url: str, stored: StoredRun) -> bool:
    """Write the marker that says the run waits for ``server_url`` (atomically, privately);
    False when it could not be written."""
    from dataclasses import asdict

    from greenml.run.spool_paths import private_folder, public_url, uploads_dir

    entry = asdict(stored.entry) if stored.entry is not None else None
    marker = {"run_id": run_id, "server": server_url, "db": public_url(db_url),
              "ledger_entry": entry, "reason": REASON}  # fmt: skip
    folder = uploads_dir()
    try:
        private_folder(folder)
        tmp = folder / f".{run_id}.json.tmp{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(marker, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, folder / f"{run_id}.json")
    except (OSError, TypeError, ValueError) as exc:
        log.debug("greenml: upload marker of run %s not written: %r", run_id, exc)
        return False
    return True


def start_sender(db_url: str) -> None:
    """Start the detached sender of the runs waiting for the server (outlives this process)."""
    subprocess.Popen(
        [sys.executable, "-m", "greenml.run.upload_later"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True, env={**os.environ, URL_ENV: db_url},
    )  # fmt: skip


def main() -> int:
    """``python -m greenml.run.upload_later``: send the runs waiting in the store of
    ``$GREENML_UPLOAD_DB_URL`` to the configured server (the detached sender)."""
    from greenml.run.server_settings import server_settings
    from greenml.run.upload import push_pending
    from greenml.store import open_store

    try:
        settings = server_settings()
        if settings is None:
            return 0
        with open_store(os.environ.get(URL_ENV)) as store:
            _, waiting, errors = push_pending(store, settings)
    except GreenmlError as exc:
        print(f"greenml: waiting runs not sent: {exc}", file=sys.stderr)
        return 1
    return 1 if waiting or errors else 0


if __name__ == "__main__":
    raise SystemExit(main())

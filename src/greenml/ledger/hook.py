"""Ledger each finished run from whichever process stored it; never raise.

The recorder (run stored in-process) and the spool ingester (run stored by a
detached writer or a reader) call these right after ``finish_run``. A ledger
that cannot be written costs the run nothing: a warning, once per process, says why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from greenml.ledger.canonical import record_sha256
from greenml.ledger.file import append_hash
from greenml.ledger.keys import load_private_key
from greenml.ledger.paths import KEY_ENV, key_path_from_env, ledger_path

if TYPE_CHECKING:
    from greenml.ledger.entry import Entry
    from greenml.record.run_record import RunRecord
    from greenml.store.repository import Store

log = logging.getLogger("greenml")
_warned: set[str] = set()


def append_run(
    store_url: str | None, record: RunRecord | Mapping[str, Any], store: Store | None = None
) -> Entry | None:
    """Append a finished run's record to its store's ledger, signed when
    ``GREENML_LEDGER_KEY`` is set; ``None`` when nothing was appended.

    A key that cannot be loaded leaves the entry unsigned (with a warning)
    rather than a hole in the chain. A typed record is hashed as its ``to_dict()``.
    With ``store``, the store also keeps the new head (:mod:`greenml.ledger.anchor`).
    """
    try:
        path = ledger_path(store_url)
        if path is None:
            return None  # an in-memory store: nothing outlives the process to audit
        digest = record_sha256(record)
        anchor = None if store is None else _anchor_in(store)
        return append_hash(path, _run_id(record), digest, _signing_key(), anchor)
    except Exception as exc:  # the run is stored: the ledger must not cost the user anything
        _warn("append", f"run {_run_id(record)} not added to the ledger: {exc}")
        return None


def append_stored_run(store: Store, run_id: str) -> RunRecord | None:
    """Read a just-finished run back from the store and ledger it (see :func:`append_run`).

    Returns:
        The record read and ledgered; ``None`` when it cannot be read (a warning says why).
    """
    return ledger_stored_run(store, run_id)[0]


def ledger_stored_run(store: Store, run_id: str) -> tuple[RunRecord | None, Entry | None]:
    """As :func:`append_stored_run`, with the ledger entry appended (``None``: none was)."""
    try:
        record = store.get_run_record(run_id)
    except Exception as exc:
        _warn("append", f"run {run_id} not added to the ledger: its record cannot be read: {exc}")
        return None, None
    return record, append_run(store.url, record, store)


def _anchor_in(store: Store) -> Callable[[Entry, str | None], None]:
    """Keep each appended head in ``store``; a store that refuses only warns."""

    def keep(entry: Entry, first_hash: str | None) -> None:
        from greenml.ledger.anchor import record_head

        try:
            record_head(store, entry, first_hash)
        except Exception as exc:  # the entry is on disk: an anchor missing only weakens verify
            _warn("anchor", f"the store did not keep the ledger's head (seq {entry.seq}): {exc}")

    return keep


def _run_id(record: RunRecord | Mapping[str, Any]) -> str:
    return str(record.get("id") if isinstance(record, Mapping) else record.id)


def _signing_key() -> Any:
    path = key_path_from_env()
    if path is None:
        return None
    try:
        return load_private_key(path)
    except Exception as exc:
        _warn("key", f"ledger entries are not signed: {KEY_ENV}: {exc}")
        return None


def _warn(what: str, message: str) -> None:
    """Warn once per process for each kind of failure (``append``, ``key``, ``anchor``)."""
    if what not in _warned:
        _warned.add(what)
        log.warning("greenml: %s", message)

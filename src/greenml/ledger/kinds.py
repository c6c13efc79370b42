"""Ledger entries that are not a run's: where their documents live in the store.

A verified saving (``kind = "saving"``) is kept in the store's state
(namespace ``savings``, key ``verified``, by saving id); its entry hashes that document
(:func:`greenml.ledger.canonical.record_sha256`), so ``greenml ledger verify --db``
shows whether it was changed or removed after it was ledgered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from greenml.ledger.entry import Entry
    from greenml.store.repository import Store

NAMESPACE = "savings"
VERIFIED = "verified"


def stored_document(store: Store, entry: Entry) -> dict[str, Any] | None:
    """The document an entry of a kind hashed, as the store keeps it now (``None``: gone)."""
    if entry.kind != "saving":
        return None
    state = store.get_state(NAMESPACE, VERIFIED) or {}
    found = (state.get("savings") or {}).get(entry.run_id)
    return found if isinstance(found, dict) else None

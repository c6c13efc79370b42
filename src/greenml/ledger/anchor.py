"""The ledger's head, anchored in the store, where rewriting the ledger file cannot reach.

A chain alone cannot show its newest entries cut off. So each time a store's
run is ledgered, the store keeps the seq and ``entry_hash`` of that newest
entry in its ``meta`` table, under ``ledger_head:<first hash>`` (one anchor per
chain, named by its seq 1's ``entry_hash``: machines sharing a PostgreSQL store
each keep their own ledger). It is written under the ledger's lock, after the
line is on disk, and only ever moves forward. ``verify`` with the store then
finds a removed tail, or a replaced newest entry, by structure. A store written
by an earlier greenml has no anchor, and its ledger verifies as before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import select, update

from greenml.store.schema import meta

if TYPE_CHECKING:
    from greenml.ledger.entry import Entry
    from greenml.store.repository import Store

PREFIX = "ledger_head:"
_KEY_HEX = 64 - len(PREFIX)  # meta.key is 64 characters


@dataclass(frozen=True)
class Anchor:
    """The newest entry the store saw appended to one chain."""

    seq: int
    entry_hash: str


def anchor_key(first_hash: str) -> str:
    """The ``meta`` key of the chain whose seq 1 has this ``entry_hash``."""
    return PREFIX + first_hash[:_KEY_HEX]


def record_head(store: Store, entry: Entry, first_hash: str | None) -> None:
    """Keep ``entry`` as the head of its chain in ``store``, unless a later one is kept.

    Raises:
        StoreError: The store cannot be written.
    """
    if first_hash is None:
        return  # the first line is not an entry: the chain check names it
    key = anchor_key(first_hash)
    value = json.dumps({"seq": entry.seq, "entry_hash": entry.entry_hash})
    with store.writing("keep the ledger's head in") as conn:
        current = conn.execute(
            select(meta.c.value).where(meta.c.key == key).with_for_update()
        ).scalar_one_or_none()
        if current is None:
            conn.execute(meta.insert().values(key=key, value=value))
            return
        kept = _parse(current)
        if kept is None or entry.seq > kept.seq:
            conn.execute(update(meta).where(meta.c.key == key).values(value=value))


def read_head(store: Store, first_hash: str) -> Anchor | None:
    """The anchor the store keeps for the chain starting with ``first_hash`` (or ``None``).

    Raises:
        StoreError: The store cannot be read.
    """
    with store.reading("read the ledger's head from") as conn:
        raw = conn.execute(
            select(meta.c.value).where(meta.c.key == anchor_key(first_hash))
        ).scalar_one_or_none()
    return None if raw is None else _parse(raw)


def _parse(raw: str) -> Anchor | None:
    try:
        data = json.loads(raw)
        seq, entry_hash = data["seq"], data["entry_hash"]
    except (ValueError, TypeError, KeyError):
        return None
    if type(seq) is not int or not isinstance(entry_hash, str):
        return None
    return Anchor(seq, entry_hash)

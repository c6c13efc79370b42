"""One ledger entry: its fields, its hash, and its JSON line."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from greenml.errors import LedgerError
from greenml.ledger.canonical import canonical_json, sha256_hex

GENESIS_HASH = "0" * 64
"""The ``prev_hash`` of the first entry."""

HASHED_FIELDS = ("seq", "run_id", "record_sha256", "prev_hash", "appended_at")
"""The fields ``entry_hash`` covers (the hash of their canonical JSON object)."""

KIND = "kind"
"""An entry that is not a run's carries its kind (``saving``), hashed with the fields above;
a run's entry has none, so every entry written before kinds existed keeps its hash."""
KINDS = ("saving",)

FIELDS = (*HASHED_FIELDS, KIND, "entry_hash", "signature", "key_id")

_HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Entry:
    """A line of the ledger: a run's record hash, chained to the entry before it.

    ``entry_hash`` is the SHA-256 of the canonical JSON of the hashed fields;
    ``signature`` (base64) is an Ed25519 signature over the 64 ASCII hex
    characters of ``entry_hash`` by the key whose id is ``key_id``.
    """

    seq: int
    run_id: str
    record_sha256: str
    prev_hash: str
    appended_at: str
    entry_hash: str
    signature: str | None = None
    key_id: str | None = None
    kind: str | None = None  # None: a run's record; ``saving``: a verified saving

    def hashed(self) -> dict[str, Any]:
        """The fields covered by ``entry_hash`` (``kind`` only when the entry has one)."""
        out = {name: getattr(self, name) for name in HASHED_FIELDS}
        if self.kind is not None:
            out[KIND] = self.kind
        return out

    def computed_hash(self) -> str:
        """``entry_hash`` as it should be for the current field values."""
        return compute_entry_hash(self.hashed())

    def core(self) -> dict[str, Any]:
        """The hashed fields plus ``entry_hash`` (no signature)."""
        return {**self.hashed(), "entry_hash": self.entry_hash}

    def to_dict(self) -> dict[str, Any]:
        """All fields; ``signature`` and ``key_id`` only when signed."""
        out = self.core()
        if self.signature is not None:
            out["signature"] = self.signature
            out["key_id"] = self.key_id
        return out

    def to_line(self) -> str:
        """The entry as one JSON line (with its newline)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":")) + "\n"

    def where(self) -> str:
        """``seq 3 (run 5b1463e447f8)``: how problems name this entry."""
        return f"seq {self.seq} (run {self.run_id})"


def compute_entry_hash(fields: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the hashed fields (``kind`` too, when given)."""
    hashed = {name: fields[name] for name in HASHED_FIELDS}
    if fields.get(KIND) is not None:
        hashed[KIND] = fields[KIND]
    return sha256_hex(canonical_json(hashed))


def parse_entry(data: Any) -> tuple[Entry, list[str]]:
    """An entry from a decoded JSON line, and the names of unexpected fields in it.

    Raises:
        LedgerError: A field is missing or has the wrong type or form.
    """
    if not isinstance(data, dict):
        raise LedgerError("not a JSON object")
    missing = [name for name in (*HASHED_FIELDS, "entry_hash") if name not in data]
    if missing:
        raise LedgerError(f"missing field(s) {', '.join(missing)}")
    seq = data["seq"]
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        raise LedgerError(f"seq {seq!r} is not a positive integer")
    for name in ("run_id", "appended_at"):
        if not isinstance(data[name], str):
            raise LedgerError(f"{name} {data[name]!r} is not a string")
    for name in ("record_sha256", "prev_hash", "entry_hash"):
        if not isinstance(data[name], str) or not _HEX64.fullmatch(data[name]):
            raise LedgerError(f"{name} {data[name]!r} is not 64 lowercase hex digits")
    for name in ("signature", "key_id"):
        if data.get(name) is not None and not isinstance(data[name], str):
            raise LedgerError(f"{name} {data[name]!r} is not a string")
    if KIND in data and data[KIND] not in KINDS:
        raise LedgerError(f"kind {data[KIND]!r} is not one of {', '.join(KINDS)}")
    entry = Entry(
        seq=seq,
        run_id=data["run_id"],
        record_sha256=data["record_sha256"],
        prev_hash=data["prev_hash"],
        appended_at=data["appended_at"],
        entry_hash=data["entry_hash"],
        signature=data.get("signature"),
        key_id=data.get("key_id"),
        kind=data.get(KIND),
    )
    return entry, sorted(set(data) - set(FIELDS))


def parse_line(line: str) -> tuple[Entry, list[str]]:
    """An entry from one line of the ledger file (see :func:`parse_entry`).

    Raises:
        LedgerError: Not JSON, or not an entry.
    """
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise LedgerError(f"not JSON ({exc})") from exc
    return parse_entry(data)

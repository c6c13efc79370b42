"""Signed statements: what the ledger held, attested by an Ed25519 key for a third party.

A statement is ``{"statement": BODY, "signature": SIG}``; ``SIG`` is the base64
Ed25519 signature over the canonical JSON (:mod:`greenml.ledger.canonical`) of
``BODY``. The body holds the entry count, seq range, head hash, time range,
the signer's key fingerprint and (unless exported head-only) every entry, so
that anyone with the public key can check it, and check that a run record
(a ``greenml runs export`` file) is in it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from greenml.errors import LedgerError
from greenml.ledger.audit import verify
from greenml.ledger.canonical import canonical_json, record_sha256
from greenml.ledger.entry import GENESIS_HASH, Entry, parse_entry
from greenml.ledger.keys import as_private_key, as_public_key, fingerprint, sign, signature_valid

FORMAT = "greenml-ledger-statement/1"


@dataclass
class StatementCheck:
    """What :func:`verify_statement` found."""

    problems: list[str] = field(default_factory=list)
    body: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the signature and the content check out."""
        return not self.problems


def export(ledger_path: str | Path, private_key: Any, *, head_only: bool = False) -> dict[str, Any]:
    """A signed statement of the ledger's current content.

    Args:
        ledger_path: The ledger file; it must verify (hash chain) before it is signed.
        private_key: An Ed25519 private key or a PEM path.
        head_only: Leave the entries out (then records cannot be checked against it).

    Raises:
        LedgerError: The ledger is unreadable, empty or has problems.
        ConfigError: The key cannot be loaded.
    """
    key = as_private_key(private_key)
    result = verify(ledger_path)
    if not result.ok:
        raise LedgerError(
            f"the ledger {ledger_path} has {len(result.problems)} problem(s), first: "
            f"{result.problems[0]}; not signing it (see greenml ledger verify)"
        )
    entries = result.entries
    if not entries:
        raise LedgerError(f"the ledger {ledger_path} is empty: nothing to sign")
    body: dict[str, Any] = {
        "format": FORMAT,
        "issued_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "count": len(entries),
        "first_seq": entries[0].seq,
        "last_seq": entries[-1].seq,
        "head_hash": entries[-1].entry_hash,
        "from": entries[0].appended_at,
        "to": entries[-1].appended_at,
        "signer": {"algorithm": "Ed25519", "fingerprint": fingerprint(key.public_key())},
    }
    if not head_only:
        body["entries"] = [e.core() for e in entries]
    return {"statement": body, "signature": sign(key, canonical_json(body))}


def verify_statement(statement: Any, public_key: Any) -> StatementCheck:
    """Check a statement's signature with the public key alone, then its content.

    Raises:
        ConfigError: The public key cannot be loaded.
    """
    key = as_public_key(public_key)
    check = StatementCheck()
    if not isinstance(statement, dict) or not isinstance(statement.get("statement"), dict):
        check.problems.append("not a greenml ledger statement")
        return check
    body: dict[str, Any] = statement["statement"]
    check.body = body
    if body.get("format") != FORMAT:
        check.problems.append(f"unknown statement format {body.get('format')!r}, not {FORMAT}")
        return check
    given = fingerprint(key)
    signer = (body.get("signer") or {}).get("fingerprint")
    if signer != given:
        check.problems.append(
            f"signed by key {str(signer)[:16]}, not by the given key {given[:16]}"
        )
        return check
    signature = statement.get("signature")
    try:
        data = canonical_json(body)
    except LedgerError as exc:
        check.problems.append(f"the statement cannot be canonicalized: {exc}")
        return check
    if not isinstance(signature, str) or not signature_valid(key, signature, data):
        check.problems.append("bad signature: the statement was changed after it was signed")
        return check
    check.problems.extend(_content_problems(body))
    return check


def statement_includes(statement: Mapping[str, Any], record: Mapping[str, Any]) -> Entry | None:
    """The statement's entry for this run record (same run id and record hash), if any.

    Raises:
        LedgerError: The statement holds no entries (it was exported head-only).
    """
    entries = _entries(statement)
    digest = record_sha256(record)
    for e in entries:
        if e.record_sha256 == digest and e.run_id == record.get("id"):
            return e
    return None


def entries_of_run(statement: Mapping[str, Any], run_id: str) -> list[Entry]:
    """The statement's entries for a run id (whatever their record hash)."""
    return [e for e in _entries(statement) if e.run_id == run_id]


def _entries(statement: Mapping[str, Any]) -> list[Entry]:
    body = statement.get("statement") or {}
    raw = body.get("entries")
    if raw is None:
        raise LedgerError("the statement holds only the head hash: export it with its entries")
    return [parse_entry(item)[0] for item in raw]


def _content_problems(body: dict[str, Any]) -> list[str]:
    """Whether the body agrees with itself (a faulty or dishonest signer)."""
    if "entries" not in body:
        return []
    try:
        entries = [parse_entry(item)[0] for item in body["entries"]]
    except (LedgerError, TypeError) as exc:
        return [f"an entry of the statement is malformed: {exc}"]
    problems = [f"{e.where()}: entry_hash does not match its fields"
                for e in entries if e.computed_hash() != e.entry_hash]  # fmt: skip
    for a, b in itertools.pairwise(entries):
        if b.seq != a.seq + 1 or b.prev_hash != a.entry_hash:
            problems.append(f"{b.where()} does not follow {a.where()} in the chain")
    if entries and entries[0].seq == 1 and entries[0].prev_hash != GENESIS_HASH:
        problems.append("seq 1: prev_hash is not 64 zeros")
    summary = {
        "count": len(entries),
        "first_seq": entries[0].seq if entries else None,
        "last_seq": entries[-1].seq if entries else None,
        "head_hash": entries[-1].entry_hash if entries else None,
        "from": entries[0].appended_at if entries else None,
        "to": entries[-1].appended_at if entries else None,
    }
    problems += [f"{name} is {body.get(name)!r} but the entries give {value!r}"
                 for name, value in summary.items() if body.get(name) != value]  # fmt: skip
    return problems

"""A tamper-evident ledger of runs: an append-only hash chain of run records.

Every finished run's record (exactly what ``Store.get_record`` returns) is
hashed (SHA-256 of its canonical JSON, :mod:`greenml.ledger.canonical`) and
appended as one JSON line to the store's ledger file::

    {"seq": 3, "run_id": "5b1463e447f8", "record_sha256": "…", "prev_hash": "…",
     "appended_at": "2024-05-01T12:00:00.000000+00:00", "entry_hash": "…",
     "signature": "…", "key_id": "…"}

``entry_hash`` is the SHA-256 of the canonical JSON of ``{seq, run_id,
record_sha256, prev_hash, appended_at}``; ``prev_hash`` is the previous
entry's ``entry_hash`` (64 zeros for the first). With ``GREENML_LEDGER_KEY``
(a PEM Ed25519 private key) each entry also carries an Ed25519 signature over
its ``entry_hash``. The file lives next to the SQLite database, or in the
per-user data directory for PostgreSQL; ``GREENML_LEDGER`` overrides it.

    from greenml.ledger import verify
    result = verify("runs.ledger.jsonl", store=None, public_key="greenml-ledger.pub")
    for problem in result.problems:
        print(problem)

Signing needs the ``cryptography`` package (``pip install 'greenml[ledger]'``);
hash-chain verification does not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

if TYPE_CHECKING:
    from greenml.errors import LedgerError
    from greenml.ledger.audit import Problem, VerifyResult, verify
    from greenml.ledger.canonical import canonical_json, record_sha256
    from greenml.ledger.entry import GENESIS_HASH, Entry
    from greenml.ledger.file import append, entries, read_lines
    from greenml.ledger.hook import append_run, append_stored_run
    from greenml.ledger.keys import generate_keypair, load_private_key, load_public_key
    from greenml.ledger.paths import KEY_ENV, LEDGER_ENV, ledger_path
    from greenml.ledger.statement import (
        StatementCheck,
        entries_of_run,
        export,
        statement_includes,
        verify_statement,
    )

# public name → submodule; imported on first use so that ledgering a run stays cheap
_HOME = {
    "canonical_json": "canonical", "record_sha256": "canonical",
    "GENESIS_HASH": "entry", "Entry": "entry", "LedgerError": "entry",
    "append": "file", "entries": "file", "read_lines": "file",
    "append_run": "hook", "append_stored_run": "hook",
    "generate_keypair": "keys", "load_private_key": "keys", "load_public_key": "keys",
    "KEY_ENV": "paths", "LEDGER_ENV": "paths", "ledger_path": "paths",
    "StatementCheck": "statement", "entries_of_run": "statement", "export": "statement",
    "statement_includes": "statement", "verify_statement": "statement",
    "Problem": "audit", "VerifyResult": "audit", "verify": "audit",
}  # fmt: skip

__all__ = [
    "GENESIS_HASH",
    "KEY_ENV",
    "LEDGER_ENV",
    "Entry",
    "LedgerError",
    "Problem",
    "StatementCheck",
    "VerifyResult",
    "append",
    "append_run",
    "append_stored_run",
    "canonical_json",
    "entries",
    "entries_of_run",
    "export",
    "generate_keypair",
    "ledger_path",
    "load_private_key",
    "load_public_key",
    "read_lines",
    "record_sha256",
    "statement_includes",
    "verify",
    "verify_statement",
]


__getattr__ = lazy_exports(
    __name__, {name: f"greenml.ledger.{home}" for name, home in _HOME.items()})  # fmt: skip

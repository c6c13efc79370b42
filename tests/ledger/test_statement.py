"""A signed statement is checked with the public key alone; a forged one is rejected."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from greenml.errors import ConfigError
from greenml.ledger import (
    LedgerError,
    entries_of_run,
    export,
    statement_includes,
    verify_statement,
)
from greenml.ledger.keys import fingerprint, load_public_key
from greenml.store.export import record_to_json
from greenml.store.repository import Store
from tests.ledger.conftest import add_runs, read, write


def flip_a_bit(signature: str) -> str:
    raw = bytearray(base64.b64decode(signature))
    raw[10] ^= 1
    return base64.b64encode(bytes(raw)).decode("ascii")


@pytest.fixture
def statement(store: Store, ledger: Path, keys: dict[str, Path]) -> dict[str, Any]:
    add_runs(store, 3)
    return export(ledger, keys["key"])


def test_a_third_party_verifies_it_with_the_public_key_alone(
    statement: dict[str, Any], ledger: Path, keys: dict[str, Path]
) -> None:
    shipped = json.loads(json.dumps(statement))  # as a file would carry it
    check = verify_statement(shipped, keys["pub"])
    assert check.ok, check.problems
    body = check.body
    entries = read(ledger)
    assert body["count"] == 3 and (body["first_seq"], body["last_seq"]) == (1, 3)
    assert body["head_hash"] == entries[-1]["entry_hash"]
    assert (body["from"], body["to"]) == (entries[0]["appended_at"], entries[-1]["appended_at"])
    assert body["signer"]["fingerprint"] == fingerprint(load_public_key(keys["pub"]))
    assert [e["entry_hash"] for e in body["entries"]] == [e["entry_hash"] for e in entries]


@pytest.mark.parametrize(
    "forge",
    [
        lambda s: s["statement"].update(count=2),
        lambda s: s["statement"]["entries"][1].update(record_sha256="3" * 64),
        lambda s: s["statement"]["entries"].pop(),
        lambda s: s["statement"].update(to="2099-01-01T00:00:00+00:00"),
        lambda s: s.update(signature=flip_a_bit(s["signature"])),
    ],
)
def test_a_forged_statement_is_rejected(
    statement: dict[str, Any], keys: dict[str, Path], forge: Any
) -> None:
    forged = copy.deepcopy(statement)
    forge(forged)
    check = verify_statement(forged, keys["pub"])
    assert check.problems == ["bad signature: the statement was changed after it was signed"]


def test_a_statement_signed_by_another_key_is_rejected(
    store: Store, ledger: Path, keys: dict[str, Path]
) -> None:
    add_runs(store, 1)
    forged = export(ledger, keys["other_key"])
    (problem,) = verify_statement(forged, keys["pub"]).problems
    assert problem.startswith("signed by key ") and "not by the given key" in problem


def test_an_exported_record_is_found_in_it(
    statement: dict[str, Any], store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "run.json"
    path.write_text(record_to_json(store.get_record(f"{1:012x}")))  # greenml runs export
    record = json.loads(path.read_text())
    entry = statement_includes(statement, record)
    assert entry is not None and entry.seq == 2
    record["duration_s"] += 1
    assert statement_includes(statement, record) is None
    assert [e.seq for e in entries_of_run(statement, record["id"])] == [2]


def test_a_head_only_statement_verifies_but_cannot_show_inclusion(
    store: Store, ledger: Path, keys: dict[str, Path]
) -> None:
    add_runs(store, 2)
    statement = export(ledger, keys["key"], head_only=True)
    assert "entries" not in statement["statement"]
    assert verify_statement(statement, keys["pub"]).ok
    with pytest.raises(LedgerError, match="only the head hash"):
        statement_includes(statement, store.get_record(f"{0:012x}"))


def test_a_broken_ledger_is_not_signed(store: Store, ledger: Path, keys: dict[str, Path]) -> None:
    add_runs(store, 3)
    write(ledger, read(ledger)[1:])
    with pytest.raises(LedgerError, match="1 problem"):
        export(ledger, keys["key"])


def test_keys_that_are_not_ed25519_keys_are_one_clear_error(
    tmp_path: Path, keys: dict[str, Path], ledger: Path
) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n")
    with pytest.raises(ConfigError, match="is not a PEM public key"):
        load_public_key(junk)
    with pytest.raises(ConfigError, match="holds a private key"):
        load_public_key(keys["key"])
    with pytest.raises(ConfigError, match="not found"):
        export(ledger, tmp_path / "missing.key")

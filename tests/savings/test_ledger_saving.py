"""Verified savings in the ledger: an entry of kind ``saving``; older entries keep their hash."""

from __future__ import annotations

import json
from pathlib import Path

from greenml.ledger.audit import verify
from greenml.ledger.canonical import canonical_json, record_sha256, sha256_hex
from greenml.ledger.entry import GENESIS_HASH, HASHED_FIELDS, parse_line
from greenml.ledger.file import append_hash, read_lines
from greenml.savings import state
from greenml.store import open_store


def test_a_run_entry_hashes_as_before_kinds_existed(tmp_path: Path) -> None:
    ledger = tmp_path / "l.jsonl"
    entry = append_hash(ledger, "5b1463e447f8", "a" * 64)
    fields = json.loads(ledger.read_text())
    assert "kind" not in fields
    old_rule = sha256_hex(canonical_json({k: fields[k] for k in HASHED_FIELDS}))
    assert entry.entry_hash == old_rule == fields["entry_hash"]


def test_a_saving_entry_is_chained_and_its_kind_is_hashed(tmp_path: Path) -> None:
    ledger = tmp_path / "l.jsonl"
    first = append_hash(ledger, "run1", "a" * 64)
    saving = append_hash(ledger, "gpu-power@2026", "b" * 64, kind="saving")
    assert saving.prev_hash == first.entry_hash and first.prev_hash == GENESIS_HASH
    assert verify(ledger).ok
    lines = ledger.read_text().splitlines()
    edited = json.loads(lines[1])
    del edited["kind"]  # pretend the saving is a run's entry
    ledger.write_text(lines[0] + "\n" + json.dumps(edited) + "\n")
    assert [p.kind for p in verify(ledger).problems] == ["modified"]
    edited["kind"] = "bribe"
    ledger.write_text(lines[0] + "\n" + json.dumps(edited) + "\n")
    assert read_lines(ledger)[1].error is not None
    assert "kind 'bribe'" in str(read_lines(ledger)[1].error)
    parsed, unexpected = parse_line(lines[1])
    assert parsed.kind == "saving" and unexpected == []


def test_the_store_check_finds_an_edited_or_removed_saving(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    ledger = tmp_path / "runs.ledger.jsonl"
    document = {"saving_id": "s@1", "item": "s", "saving_rel": 0.18, "after_runs": ["a"]}
    with open_store(str(db)) as store:
        state.put_verified(store, {"s@1": document})
        append_hash(ledger, "s@1", record_sha256(document), kind="saving")
        assert verify(ledger, store=store).ok
        state.put_verified(store, {"s@1": {**document, "saving_rel": 0.40}})
        assert [p.kind for p in verify(ledger, store=store).problems] == ["record modified"]
        state.put_verified(store, {})
        assert [p.kind for p in verify(ledger, store=store).problems] == ["run missing"]

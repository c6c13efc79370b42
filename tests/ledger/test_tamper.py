"""Every kind of tampering is detected, and the problem names the entry and what is wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from greenml.ledger import Problem, append, verify
from greenml.ledger.entry import compute_entry_hash
from greenml.store.repository import Store
from greenml.store.url import resolve_url
from tests.ledger.conftest import add_runs, read, write

K = 3  # the entry tampered with (seq)


def kinds(problems: list[Problem]) -> list[tuple[str, int | None]]:
    return [(p.kind, p.seq) for p in problems]


@pytest.fixture
def five(store: Store, ledger: Path) -> list[dict[str, Any]]:
    """Five ledgered runs; the ledger verifies before any test tampers with it."""
    add_runs(store, 5)
    assert verify(ledger, store=store).ok
    return read(ledger)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("run_id", "f" * 12),
        ("record_sha256", "0" * 64),
        ("appended_at", "2020-01-01T00:00:00+00:00"),
    ],
)
def test_an_edited_field_is_named(
    five: list[dict[str, Any]], ledger: Path, field: str, value: str
) -> None:
    five[K - 1][field] = value
    write(ledger, five)
    result = verify(ledger)
    assert kinds(result.problems) == [("modified", K)]
    assert "entry_hash does not match its fields" in str(result.problems[0])
    assert str(result.problems[0]).startswith(f"seq {K} (run ")


def test_an_edit_with_a_recomputed_hash_breaks_the_next_link(
    five: list[dict[str, Any]], ledger: Path
) -> None:
    five[K - 1]["record_sha256"] = "1" * 64
    five[K - 1]["entry_hash"] = compute_entry_hash(five[K - 1])
    write(ledger, five)
    problems = verify(ledger).problems
    assert kinds(problems) == [("modified", K)]
    assert f"seq {K + 1}'s prev_hash is not this entry's entry_hash" in str(problems[0])


def test_a_deleted_entry_is_named(five: list[dict[str, Any]], ledger: Path) -> None:
    removed = five.pop(K - 1)
    write(ledger, five)
    problems = verify(ledger).problems
    assert kinds(problems) == [("removed", K)]
    assert str(problems[0]) == (
        f"seq {K}: removed: seq {K} missing: entry removed (between seq {K - 1} "
        f"(run {five[K - 2]['run_id']}) and seq {K + 1} (run {five[K - 1]['run_id']}))"
    )
    assert removed["run_id"] not in str(problems[0])  # its id is gone with it


def test_deleting_the_first_entries_is_named(five: list[dict[str, Any]], ledger: Path) -> None:
    write(ledger, five[2:])
    assert kinds(verify(ledger).problems) == [("removed", 1)]


@pytest.mark.parametrize("rehash", [True, False])
def test_an_inserted_forged_entry_is_named(
    five: list[dict[str, Any]], ledger: Path, rehash: bool
) -> None:
    forged = {**five[K - 1], "seq": K + 1, "run_id": "badbadbadbad", "record_sha256": "2" * 64,
              "prev_hash": five[K - 1]["entry_hash"]}  # fmt: skip
    if rehash:
        forged["entry_hash"] = compute_entry_hash(forged)
    write(ledger, [*five[:K], forged, *five[K:]])
    problems = verify(ledger).problems
    assert kinds(problems) == [("inserted", K + 1)]
    assert problems[0].run_id == "badbadbadbad"
    assert f"line {K + 1}" in str(problems[0])


def test_a_duplicated_line_is_named(five: list[dict[str, Any]], ledger: Path) -> None:
    write(ledger, [*five, five[-1]])
    problems = verify(ledger).problems
    assert kinds(problems) == [("inserted", 5)]
    assert "appears 2 times (lines 5, 6)" in str(problems[0])


def test_swapped_entries_are_named(five: list[dict[str, Any]], ledger: Path) -> None:
    five[K - 1], five[K] = five[K], five[K - 1]
    write(ledger, five)
    problems = verify(ledger).problems
    assert kinds(problems) == [("reordered", K)]
    assert f"comes after seq {K + 1}" in str(problems[0])


def test_a_torn_or_garbled_line_is_named(five: list[dict[str, Any]], ledger: Path) -> None:
    text_ = ledger.read_text().splitlines()
    text_[1] = text_[1][:40]
    ledger.write_text("\n".join(text_) + "\n")
    problems = verify(ledger).problems
    assert ("malformed", None) in kinds(problems)
    assert any(str(p).startswith("line 2: malformed: unreadable entry: not JSON") for p in problems)


def test_a_run_record_changed_after_ledgering_is_named(
    five: list[dict[str, Any]], store: Store, ledger: Path, db_url: str
) -> None:
    run_id = five[K - 1]["run_id"]
    engine = create_engine(resolve_url(db_url))
    with engine.begin() as conn:
        conn.execute(text("UPDATE runs SET duration_s = duration_s * 0.5 WHERE id = :id"),
                     {"id": run_id})  # fmt: skip
    engine.dispose()
    assert verify(ledger).ok  # the chain itself is intact
    problems = verify(ledger, store=store).problems
    assert kinds(problems) == [("record modified", K)]
    assert problems[0].run_id == run_id
    assert "changed after it was ledgered" in str(problems[0])


def test_a_deleted_run_is_named(
    five: list[dict[str, Any]], store: Store, ledger: Path, db_url: str
) -> None:
    engine = create_engine(resolve_url(db_url))
    with engine.begin() as conn:
        for table in ("samples", "windows"):
            conn.execute(text(f"DELETE FROM {table} WHERE run_id = :id"), {"id": five[0]["run_id"]})
        conn.execute(text("DELETE FROM runs WHERE id = :id"), {"id": five[0]["run_id"]})
    engine.dispose()
    assert kinds(verify(ledger, store=store).problems) == [("run missing", 1)]


def test_a_signature_by_another_key_is_named(
    store: Store, ledger: Path, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GREENML_LEDGER_KEY", str(keys["key"]))
    add_runs(store, 2)
    append(store.get_record(f"{0:012x}"), path=ledger, private_key=keys["other_key"])
    add_runs(store, 1, start=2)
    problems = verify(ledger, public_key=keys["pub"]).problems
    assert kinds(problems) == [("wrong key", 3)]
    assert "signed by key" in str(problems[0]) and "not by the given key" in str(problems[0])


def test_a_forged_signature_and_a_stripped_one_are_named(
    store: Store, ledger: Path, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GREENML_LEDGER_KEY", str(keys["key"]))
    add_runs(store, 4)
    entries = read(ledger)
    entries[1]["signature"] = entries[2]["signature"]  # valid base64, wrong message
    del entries[3]["signature"], entries[3]["key_id"]
    write(ledger, entries)
    assert kinds(verify(ledger, public_key=keys["pub"]).problems) == [
        ("bad signature", 2), ("unsigned", 4)
    ]  # fmt: skip
    assert verify(ledger).ok  # without the public key only the chain is checked


def test_an_unsigned_ledger_is_one_problem(
    five: list[dict[str, Any]], ledger: Path, keys: dict[str, Path]
) -> None:
    problems = verify(ledger, public_key=keys["pub"]).problems
    assert [str(p) for p in problems] == [
        "ledger: unsigned: no entry is signed (GREENML_LEDGER_KEY was not set when runs were "
        "ledgered)"
    ]


def test_deleting_the_newest_entry_fails_verification(store: Store, ledger: Path) -> None:
    """A finished run that ended after the ledger began and is not in it was removed."""
    import time

    from greenml.run.spool import ingest
    from tests.ledger.conftest import payload

    old = payload(store.url, "0000000000aa")  # a run from 2023, before this ledger began
    store_old = {**old, "extra": {}}
    ingest(store, store_old)
    ledger.unlink()  # as if it ran before the ledger existed
    for run_id in ("0000000000b1", "0000000000b2"):  # each starts after the previous is ledgered
        fresh = payload(store.url, run_id)
        started = time.time()
        fresh["run"] = {**fresh["run"], "started_at": started}
        fresh["finish"] = {**fresh["finish"], "ended_at": started + 3.3}
        ingest(store, fresh)
    entries = read(ledger)
    assert [e["run_id"] for e in entries] == ["0000000000b1", "0000000000b2"]
    result = verify(ledger, store=store)
    assert result.ok and result.unledgered == ["0000000000aa"]  # older than the ledger: a note
    write(ledger, entries[:-1])  # delete the newest line: the chain alone still links
    assert verify(ledger).ok
    result = verify(ledger, store=store)
    assert not result.ok
    # found twice: by the store's anchor of the head (structure) and by the run's end time
    assert [(p.kind, p.seq, p.run_id) for p in result.problems] == [
        ("removed", 2, None),
        ("removed", None, "0000000000b2"),
    ]
    assert "missing from the end" in str(result.problems[0])
    assert "not in the ledger" in str(result.problems[1])


def test_an_edited_power_timeline_is_named(
    five: list[dict[str, Any]], store: Store, ledger: Path, db_url: str
) -> None:
    """Samples are not in the hashed record, but their digest is: an edit is named."""
    run_id = five[K - 1]["run_id"]
    assert store.get_record(run_id)["samples_sha256"]
    engine = create_engine(resolve_url(db_url))
    with engine.begin() as conn:
        conn.execute(text("UPDATE samples SET power_w = power_w * 0.5 WHERE run_id = :id"),
                     {"id": run_id})  # fmt: skip
    engine.dispose()
    problems = verify(ledger, store=store).problems
    assert kinds(problems) == [("samples modified", K)]
    assert "power timeline" in str(problems[0])


@pytest.mark.parametrize(
    "forgery",
    [
        "INSERT INTO run_tags (run_id, key, value) VALUES (:id, 'team', 'forged')",
        "UPDATE run_tags SET value = 'forged' WHERE run_id = :id",
        "DELETE FROM run_tags WHERE run_id = :id",
    ],
    ids=["added", "changed", "removed"],
)
def test_a_forged_tag_index_row_fails_ledger_verify(
    five: list[dict[str, Any]], store: Store, ledger: Path, db_url: str, forgery: str
) -> None:
    """Issue 29: the tag index (what `runs list --tag` and reports filter on) was outside
    the ledger's check; a forged row is named now."""
    run_id = five[K - 1]["run_id"]
    assert store.list_runs(limit=0, tag={"team": "forged"}) == []
    engine = create_engine(resolve_url(db_url))
    with engine.begin() as conn:
        conn.execute(text(forgery), {"id": run_id})
    engine.dispose()
    problems = verify(ledger, store=store).problems
    assert kinds(problems) == [("index modified", K)]
    assert "tag index" in str(problems[0])


def test_a_forged_runs_hostname_fails_ledger_verify(
    five: list[dict[str, Any]], store: Store, ledger: Path, db_url: str
) -> None:
    """Issue 29: ``runs.hostname`` was outside the ledger's check."""
    run_id = five[K - 1]["run_id"]
    assert store.get_record(run_id)["index_sha256"]
    engine = create_engine(resolve_url(db_url))
    with engine.begin() as conn:
        conn.execute(text("UPDATE runs SET hostname = 'elsewhere' WHERE id = :id"), {"id": run_id})
    engine.dispose()
    problems = verify(ledger, store=store).problems
    assert kinds(problems) == [("index modified", K)]
    assert "host name" in str(problems[0]) and "'elsewhere'" in str(problems[0])


def test_a_record_ledgered_before_index_sha256_still_verifies(
    store: Store, ledger: Path, db_url: str
) -> None:
    """Earlier records carry no ``index_sha256``: their ledger hashes still verify (and a
    forged tag row is still named, from the record's own tags)."""
    from greenml.ledger.hook import append_run

    add_runs(store, 1)
    run_id = read(ledger)[0]["run_id"]
    engine = create_engine(resolve_url(db_url))
    with engine.begin() as conn:  # the record as an earlier greenml stored it
        extra = conn.execute(text("SELECT extra FROM runs WHERE id = :id"), {"id": run_id}).scalar()
        old = {k: v for k, v in json.loads(extra).items() if k != "index_sha256"}
        conn.execute(text("UPDATE runs SET extra = :e, hostname = 'old-host' WHERE id = :id"),
                     {"e": json.dumps(old), "id": run_id})  # fmt: skip
    engine.dispose()
    ledger.unlink()
    append_run(store.url, store.get_record(run_id))
    assert "index_sha256" not in store.get_record(run_id)
    assert verify(ledger, store=store).ok
    with store.writing("forge") as conn:
        conn.execute(text("DELETE FROM run_tags WHERE run_id = :id"), {"id": run_id})
    assert kinds(verify(ledger, store=store).problems) == [("index modified", 1)]

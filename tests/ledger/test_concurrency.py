"""Appends from several processes at once keep one valid chain."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from greenml.ledger import append, entries, verify
from tests.ledger._workers import APPENDS_PER_WORKER, appender


def test_four_processes_appending_at_once_keep_a_valid_chain(ledger: Path) -> None:
    workers = 4
    ctx = multiprocessing.get_context("spawn")
    barrier, errors = ctx.Barrier(workers), ctx.Queue()
    procs = [ctx.Process(target=appender, args=(str(ledger), w, barrier, errors))
             for w in range(workers)]  # fmt: skip
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=90)
    assert all(p.exitcode == 0 for p in procs)
    assert errors.empty(), errors.get()
    result = verify(ledger)
    assert result.ok, result.problems
    total = workers * APPENDS_PER_WORKER
    assert [e.seq for e in result.entries] == list(range(1, total + 1))
    assert len({e.run_id for e in result.entries}) == total


def test_an_append_after_a_torn_line_chains_to_the_last_whole_entry(ledger: Path) -> None:
    first = append({"id": "a"}, path=ledger)
    with ledger.open("a") as handle:
        handle.write('{"seq": 2, "run_id": "torn", "rec')  # a crash mid-write
    second = append({"id": "b"}, path=ledger)
    assert (second.seq, second.prev_hash) == (2, first.entry_hash)
    assert [e.run_id for e in entries(ledger)] == ["a", "b"]
    assert [p.kind for p in verify(ledger).problems] == ["malformed"]  # the torn line, only


def test_the_tail_is_found_across_read_blocks(ledger: Path) -> None:
    for i in range(60):  # ~20 KiB: the last entry is read from the end in 8 KiB blocks
        last = append({"id": f"run{i}", "pad": "x" * 100}, path=ledger)
    assert last.seq == 60 and verify(ledger).ok


def test_a_torn_line_longer_than_a_read_block_is_skipped(ledger: Path) -> None:
    first = append({"id": "a"}, path=ledger)
    with ledger.open("a") as handle:
        handle.write("x" * 20_000)
    assert append({"id": "b"}, path=ledger).prev_hash == first.entry_hash

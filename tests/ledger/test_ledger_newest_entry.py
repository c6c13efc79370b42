"""Issue 29, "The ledger's newest entry": the store anchors the ledger's head, so a removed
or replaced newest line is found by structure, not by the clock."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import delete

from greenml.ledger import verify
from greenml.ledger.entry import compute_entry_hash
from greenml.ledger.file import read_lines
from greenml.store.repository import Store
from greenml.store.schema import meta
from tests.ledger.conftest import add_runs, read, write


def _greenml(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "greenml", *args], env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_ledger_newest_entry_removed_fails_verify(tmp_path: Path) -> None:
    """Two `greenml run -- true` back to back (within the ledger's first second), the
    newest ledger line deleted: `greenml ledger verify` fails, naming the removal."""
    db = tmp_path / "runs.db"
    env = {**os.environ, "GREENML_SPOOL_DIR": str(tmp_path / "spool")}
    for name in ("GREENML_DB", "GREENML_LEDGER", "GREENML_LEDGER_KEY"):
        env.pop(name, None)
    for _ in range(2):
        done = _greenml(env, "run", "-q", "--db", str(db), "--", "true")
        assert done.returncode == 0, done.stderr
    ledger = tmp_path / "runs.ledger.jsonl"
    deadline = time.monotonic() + 60  # `true` is stored by a detached writer
    while time.monotonic() < deadline:
        if ledger.exists() and len([x for x in read_lines(ledger) if x.entry]) == 2:
            break
        time.sleep(0.05)
    entries = read(ledger)
    assert len(entries) == 2
    verified = _greenml(env, "ledger", "verify", "--db", str(db))
    assert verified.returncode == 0, verified.stdout + verified.stderr

    write(ledger, entries[:-1])  # the chain alone still links
    verified = _greenml(env, "ledger", "verify", "--db", str(db))
    assert verified.returncode == 1, verified.stdout + verified.stderr
    assert "seq 2: removed: seq 2 missing from the end" in verified.stdout
    assert "Traceback" not in verified.stderr


def test_ledger_newest_entry_replaced_or_removed_is_named(store: Store, ledger: Path) -> None:
    """On every backend: the anchor names a removed tail and a replaced newest entry."""
    add_runs(store, 3)
    entries = read(ledger)
    assert verify(ledger, store=store).ok

    write(ledger, entries[:1])
    problems = verify(ledger, store=store).problems
    anchored = [p for p in problems if p.seq == 2]
    assert [p.kind for p in anchored] == ["removed"]
    assert "seq 2 to 3 missing from the end" in str(anchored[0])

    forged = dict(entries[2], appended_at="2020-01-01T00:00:00.000000+00:00")
    forged["entry_hash"] = compute_entry_hash(forged)
    write(ledger, [*entries[:2], forged])
    problems = verify(ledger, store=store).problems
    assert [(p.kind, p.seq) for p in problems] == [("modified", 3)]
    assert "not the entry the store recorded" in str(problems[0])


def test_ledger_newest_entry_earlier_ledgers_without_anchor_still_verify(
    store: Store, ledger: Path
) -> None:
    """A store written by an earlier greenml has no anchor: its ledger verifies as before."""
    add_runs(store, 2)
    with store.writing("forget the ledger anchor of") as conn:
        conn.execute(delete(meta).where(meta.c.key.like("ledger_head%")))
    result = verify(ledger, store=store)
    assert result.ok, [str(p) for p in result.problems]
    assert result.count == 2

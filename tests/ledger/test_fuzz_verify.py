"""Fuzz: a ledger file with any bytes in it verifies to a list of problems, never a crash."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from greenml.errors import LedgerError
from greenml.ledger import verify
from greenml.ledger.file import append_hash


def _ledger(folder: Path, count: int) -> list[bytes]:
    path = folder / "l.jsonl"
    for i in range(count):
        append_hash(path, f"{i:012x}", "a" * 64)
    return path.read_bytes().splitlines(keepends=True)


@settings(max_examples=120, deadline=None)
@given(
    count=st.integers(1, 4),
    edits=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 400), st.binary(max_size=6)), max_size=4
    ),
    drop=st.sets(st.integers(0, 3), max_size=2),
)
def test_a_mangled_ledger_is_named_never_a_crash(
    count: int, edits: list[tuple[int, int, bytes]], drop: set[int]
) -> None:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        lines = _ledger(folder, count)
        before = verify(folder / "l.jsonl").entries
        for line, at, data in edits:
            if line < len(lines):
                text = lines[line]
                lines[line] = text[:at] + data + text[at + len(data):]
        lines = [text for i, text in enumerate(lines) if i not in drop]
        path = folder / "l.jsonl"
        path.write_bytes(b"".join(lines))
        try:
            result = verify(path)
        except LedgerError:
            return  # unreadable as a whole: one error of the tree
        if result.ok:  # nothing was changed that matters, or only the newest lines were cut
            assert result.entries == before[: len(result.entries)]  # (the store names those)
        for problem in result.problems:
            assert str(problem)

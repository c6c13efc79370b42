"""Issue 29 item 3: no output option destroys the store, its SQLite side files or its ledger.

Each writing option of each command is pointed at the store, at its ``-wal``/``-shm``/
``-journal`` names and at its ledger, through the real entry point: every one must be
refused with one line, exit 2, and leave the files byte for byte as they were.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from greenml.store.protected_files import protected_kind
from tests.helpers import greenml_cli


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """A real store with one run and its ledger: (db, ledger, run id)."""
    folder = tmp_path_factory.mktemp("store")
    db = folder / "runs.db"
    home = folder / "home"
    home.mkdir()
    out = folder / "run.json"
    done = greenml_cli("run", "-q", "--db", str(db), "--ci", "300", "--json-out", str(out),
                       "--", "true", HOME=str(home))  # fmt: skip
    assert done.returncode == 0, done.stderr
    run_id = json.loads(out.read_text())["id"]
    ledger = db.with_name("runs.ledger.jsonl")
    assert ledger.exists()
    return db, ledger, run_id


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "absent"


COMMANDS = {
    "runs export --all -o": ["runs", "export", "--all", "-o", "{target}"],
    "runs export RUN -o": ["runs", "export", "{run}", "--format", "json", "-o", "{target}"],
    "report -o": ["report", "{run}", "-o", "{target}"],
    "ledger export -o": ["ledger", "export", "--key", "{folder}/none.pem", "-o", "{target}"],
    "run --json-out": ["run", "-q", "--json-out", "{target}", "--", "true"],
}
TARGETS = ["store", "store-wal", "store-shm", "store-journal", "ledger"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_output_options_refuse_the_store_and_the_ledger(
    store: tuple[Path, Path, str], command: str, target: str, tmp_path: Path
) -> None:
    db, ledger, run_id = store
    path = {"store": db, "ledger": ledger}.get(target) or db.with_name(
        db.name + "-" + target.split("-")[1]
    )
    before = {p: _digest(p) for p in (db, ledger, path)}
    args = [a.format(target=path, run=run_id, folder=tmp_path) for a in COMMANDS[command]]
    if args[0] == "run":
        args[1:1] = ["--db", str(db)]
    else:
        args += ["--db", str(db)]
    done = greenml_cli(*args, HOME=str(tmp_path))
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "would destroy it" in lines[0], done.stderr
    assert "Traceback" not in done.stderr
    assert {p: _digest(p) for p in (db, ledger, path)} == before


def test_an_ordinary_file_is_not_protected(tmp_path: Path) -> None:
    plain = tmp_path / "report.md"
    plain.write_text("# a report\n")
    assert protected_kind(plain) is None
    assert protected_kind(tmp_path / "new.json") is None
    assert protected_kind(tmp_path / "x.json-wal") is None  # no SQLite file beside it


NAMES = st.sampled_from(["a.db", "a.ledger.jsonl", "x", "b-wal"])


@given(content=st.binary(max_size=200), name=NAMES)
def test_any_file_content_gets_an_answer_not_an_error(content: bytes, name: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(content)
        kind = protected_kind(path)
        assert kind is None or isinstance(kind, str)
        if content.startswith(b"SQLite format 3\x00"):
            assert kind is not None

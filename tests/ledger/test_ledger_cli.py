"""``greenml ledger ...`` in-process, and ``greenml run`` → ``greenml ledger verify`` end to end."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from greenml.cli import app, main
from greenml.store import open_store
from greenml.store.repository import Store
from tests.ledger.conftest import add_runs, read, write

# runs `greenml` with the ledger group registered, whether or not app.py lists it yet
WRAPPER = (
    "import sys; from greenml.cli import app; "
    "app.COMMANDS.setdefault('ledger', 'greenml.cli.ledger:ledger'); "
    "from greenml.cli import main; sys.exit(main(sys.argv[1:]))"
)


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(app.COMMANDS, "ledger", "greenml.cli.ledger:ledger")


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    path = tmp_path / "runs.db"
    monkeypatch.setenv("GREENML_DB", str(path))
    with open_store(str(path)) as store:
        add_runs(store, 3)
    return store


def test_verify_ok(db: Store, ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ledger", "verify"]) == 0
    head = read(ledger)[-1]["entry_hash"]
    assert capsys.readouterr().out == f"ledger OK: 3 entries, head {head}\n"


def test_verify_lists_each_problem(
    db: Store, ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entries = read(ledger)
    entries[0]["run_id"] = "000000000fff"
    write(ledger, [entries[0], entries[2]])
    assert main(["ledger", "verify", "--ledger", str(ledger)]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "seq 1 (run 000000000fff): modified: entry_hash does not match its fields: the entry "
        "was edited (line 1)",
        f"seq 2: removed: seq 2 missing: entry removed (between seq 1 (run 000000000fff) and "
        f"seq 3 (run {entries[2]['run_id']}))",
    ]
    assert "ledger FAILED: 2 problem(s)" in err


def test_a_record_changed_in_the_store_fails_verify(
    db: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    with sqlite3.connect(tmp_path / "runs.db") as conn:
        conn.execute("UPDATE runs SET exit_code = 1 WHERE id = ?", (f"{1:012x}",))
    assert main(["ledger", "verify", "--db", str(tmp_path / "runs.db")]) == 1
    assert "seq 2 (run 000000000001): record modified" in capsys.readouterr().out


def test_a_missing_or_wrong_key_is_one_line_exit_2(
    db: Store, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("GREENML_LEDGER_KEY", str(keys["key"]))
    with open_store(str(tmp_path / "runs.db")) as store:
        add_runs(store, 1, start=10)
    capsys.readouterr()
    for key in (tmp_path / "nope.pem", keys["key"], keys["other_pub"]):
        assert main(["ledger", "verify", "--public-key", str(key)]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and err.startswith("greenml: error: ")
    assert "wrong public key" in err


def test_keygen_export_and_verify_statement(
    db: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "keys"
    assert main(["ledger", "keygen", "--out", str(folder)]) == 0  # the old spelling still works
    assert capsys.readouterr().err == "greenml: --out is now --out-dir\n"
    key, pub = folder / "greenml-ledger.key", folder / "greenml-ledger.pub"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert main(["ledger", "keygen", "--out-dir", str(folder)]) == 2  # never overwrites
    out = tmp_path / "statement.json"
    assert main(["ledger", "export", "--key", str(key), "-o", str(out)]) == 0
    assert main(["runs", "export", f"{2:012x}", "-o", str(tmp_path / "run.json")]) == 0
    capsys.readouterr()
    args = ["ledger", "verify-statement", str(out), "--public-key", str(pub)]
    assert main([*args, "--record", str(tmp_path / "run.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("statement OK: 3 entries, head ")
    assert lines[1].startswith("run 000000000002 is included: seq 3, record ")
    forged = json.loads(out.read_text())
    forged["statement"]["count"] = 4
    out.write_text(json.dumps(forged))
    assert main(args) == 1
    assert "bad signature" in capsys.readouterr().out


def test_show_lists_the_newest_entries(db: Store, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ledger", "show", "-n", "2"]) == 0
    out = capsys.readouterr().out
    assert "000000000001" in out and "000000000002" in out and "000000000000" not in out


def test_signing_without_cryptography_says_how_to_install(
    db: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "cryptography", None)
    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives.asymmetric", None)
    assert main(["ledger", "keygen", "--out-dir", str(tmp_path / "k")]) == 2
    assert "pip install 'greenml[ledger]'" in capsys.readouterr().err
    assert main(["ledger", "verify"]) == 0  # the hash chain needs no cryptography


def test_greenml_run_then_ledger_verify(tmp_path: Path) -> None:
    env = {**os.environ, "GREENML_DB": str(tmp_path / "runs.db"),
           "GREENML_LEDGER": str(tmp_path / "ledger.jsonl"),
           "GREENML_SPOOL_DIR": str(tmp_path / "spool")}  # fmt: skip
    env.pop("GREENML_LEDGER_KEY", None)
    slow = [sys.executable, "-c", "import time; time.sleep(1.5)"]  # stored in-process
    for command in (["true"], slow):  # `true` ends first: a detached writer stores it
        done = subprocess.run([sys.executable, "-m", "greenml", "run", "-q", "--", *command],
                              env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr
    ledger = tmp_path / "ledger.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if ledger.exists() and len(ledger.read_text().splitlines()) == 2:
            break
        time.sleep(0.05)
    assert len(read(ledger)) == 2
    verified = subprocess.run([sys.executable, "-c", WRAPPER, "ledger", "verify"],
                              env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert verified.stdout.startswith("ledger OK: 2 entries, head ")

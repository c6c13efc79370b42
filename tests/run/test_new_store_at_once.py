"""Issue 29: many processes using a new SQLite store for the first time, all at once.

One of 16-64 `greenml run` failed with "File exists" and its command never ran: the
preflight probed the store's own path with ``O_EXCL`` (and removed it again, under the
feet of a process that had begun the store there). Creation is race-free now, and a
store that cannot be made for a reason of the moment (no inode left) only delays the
run: the command runs, the run waits in the spool.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from greenml.errors import ConfigError
from greenml.run.preflight import check_store_path

PY = sys.executable
PROCESSES = 16


def _env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "GREENML_SPOOL_DIR": str(tmp_path / "spool")}
    for name in ("GREENML_DB", "GREENML_LEDGER"):
        env.pop(name, None)
    return env


def _stored(db: Path, env: dict[str, str], expect: int, timeout: float = 90.0) -> list[str]:
    """The runs in ``db`` once ``expect`` are there (detached writers store them late)."""
    deadline = time.monotonic() + timeout
    ids: list[str] = []
    while time.monotonic() < deadline:
        listed = subprocess.run([PY, "-m", "greenml", "runs", "list", "--json", "-n", "1000",
                                 "--db", str(db)], capture_output=True, text=True, env=env,
                                timeout=120)  # fmt: skip
        assert listed.returncode == 0, listed.stderr
        ids = [json.loads(line)["id"] for line in listed.stdout.splitlines() if line.strip()]
        if len(ids) >= expect:
            break
        time.sleep(0.5)
    return ids


def test_concurrent_first_use_of_a_new_sqlite_store_runs_every_command(tmp_path: Path) -> None:
    """16 `greenml run -- CMD` started together on a store that does not exist yet (nor its
    folder): every one exits 0, every command ran, every run is stored."""
    db = tmp_path / "new" / "store" / "runs.db"
    env = _env(tmp_path)
    marks = tmp_path / "ran"
    marks.mkdir()
    command = [PY, "-m", "greenml", "run", "-q", "--db", str(db), "--", "touch"]
    procs = [
        subprocess.Popen([*command, str(marks / str(i))], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for i in range(PROCESSES)
    ]  # fmt: skip
    results = [(p.wait(timeout=180), p.stderr.read() if p.stderr else "") for p in procs]
    for p in procs:
        for stream in (p.stdout, p.stderr):
            if stream is not None:
                stream.close()
    failed = [err for code, err in results if code != 0]
    assert failed == [], failed[:3]
    assert len(list(marks.iterdir())) == PROCESSES  # every command ran
    assert all("Traceback" not in err and "File exists" not in err for _, err in results)
    assert len(set(_stored(db, env, PROCESSES))) == PROCESSES


def test_concurrent_first_use_of_a_new_sqlite_store_never_fails_file_exists() -> None:
    """16 threads check one new store at once, 40 times over: none is refused (before:
    "File exists", "No such file", "not readable and writable" from another's probe)."""
    errors: list[str] = []
    for _ in range(40):
        with tempfile.TemporaryDirectory() as folder:
            target = Path(folder) / "sub" / "runs.db"
            barrier = threading.Barrier(16)

            def check(target: Path = target, barrier: threading.Barrier = barrier) -> None:
                barrier.wait()
                try:
                    check_store_path(str(target))
                except ConfigError as exc:
                    errors.append(str(exc))

            threads = [threading.Thread(target=check) for _ in range(16)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert not target.exists()  # checking creates no store file
            assert [p.name for p in target.parent.iterdir()] == []  # and leaves no probe
    assert errors == []


@pytest.fixture
def no_inode_left(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs whose every inode is taken (root only; skipped otherwise)."""
    mount = tmp_path / "full"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,nr_inodes=16", "tmpfs",
                           str(mount)], capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        with contextlib.suppress(OSError):
            for i in range(64):
                (mount / f"f{i}").touch()
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_store_that_cannot_be_created_now_still_runs_the_command(
    no_inode_left: Path, tmp_path: Path
) -> None:
    """No inode left where the new store goes: the command runs (exit 0), a warning says
    the run waits, and once there is room the next reader stores it."""
    db = no_inode_left / "runs.db"
    env = _env(tmp_path)
    mark = tmp_path / "ran"
    done = subprocess.run([PY, "-m", "greenml", "run", "-q", "--db", str(db), "--", "touch",
                           str(mark)], capture_output=True, text=True, env=env,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert mark.exists()
    assert "Traceback" not in done.stderr
    assert f"cannot create database {db} now" in done.stderr, done.stderr
    for leftover in no_inode_left.glob("f*"):
        leftover.unlink()
    assert len(_stored(db, env, 1)) == 1

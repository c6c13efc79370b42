"""A full disk under the default layout loses nothing: the run waits elsewhere, said loudly.

Mounts a small tmpfs (root only; skipped otherwise) as the user's data folder, fills
it, and runs a command whose samples and record cannot go there.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PY = sys.executable


@pytest.fixture
def full_data_dir(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "data"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mount)],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        with contextlib.suppress(OSError), (mount / "filler").open("wb") as handle:
            while True:
                handle.write(b"\0" * 65536)
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_keeps_the_run_in_the_temp_spool_and_stores_it_later(
    full_data_dir: Path, tmp_path: Path
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "XDG_DATA_HOME": str(full_data_dir), "TMPDIR": str(temp)}
    env.pop("XDG_RUNTIME_DIR", None)  # no session runtime folder: the fallback is in TMPDIR
    for name in ("GREENML_DB", "GREENML_SPOOL_DIR", "GREENML_LEDGER"):
        env.pop(name, None)
    done = subprocess.run([PY, "-m", "greenml", "run", "-q", "--sample-hz", "20", "--name", "full",
                           "--", PY, "-c", "import time; time.sleep(1.5)"],
                          capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    fallback = temp / f"greenml-spool-{os.getuid()}"
    assert "the run waits in" in done.stderr and str(fallback) in done.stderr, done.stderr
    leftovers = [p.name for p in full_data_dir.rglob("*") if ".tmp" in p.name]
    assert leftovers == []  # no partial file on the full disk
    (full_data_dir / "filler").unlink()  # space again: the next reader stores the run
    listed = subprocess.run([PY, "-m", "greenml", "runs", "list", "--json"],
                            capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    rows = [line for line in listed.stdout.splitlines() if '"full"' in line]
    assert len(rows) == 1 and '"completed"' in rows[0]
    assert not any(p.suffix == ".json" for p in fallback.glob("*"))


def test_disk_nearly_full_keeps_the_spooled_run_and_stores_it_after_space_is_freed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 29 item 5: the store opens, the write fails: an outage, never bad data."""
    from greenml.run.spool import QUARANTINE, ingest_pending, write_spool
    from greenml.store import open_store
    from tests.run.test_spool import payload

    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mount)],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    spool = tmp_path / "spool"
    monkeypatch.setenv("GREENML_SPOOL_DIR", str(spool))
    db = mount / "runs.db"
    try:
        with open_store(str(db)):
            pass  # the store exists and opens
        big = payload(db)
        big["samples"] = [["cpu0", "cpu", 1.7e9 + i, 10.0, {"utilization": 0.5}]
                          for i in range(300)]  # fmt: skip
        write_spool(big)
        with open_store(str(db)) as store:  # opened, then the disk fills up
            store.list_runs()
            with contextlib.suppress(OSError), (mount / "filler").open("wb") as handle:
                while True:
                    handle.write(b"\0" * 4096)
            with contextlib.suppress(Exception):
                ingest_pending(store, str(db))
        assert [p.name for p in spool.glob("*.json")] == ["abcdef012345.json"]
        assert not (spool / QUARANTINE).exists() or not any((spool / QUARANTINE).iterdir())
        (mount / "filler").unlink()
        with open_store(str(db)) as store:
            assert ingest_pending(store, str(db)) == 1
            assert store.get_record("abcdef012345")["status"] == "completed"
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)

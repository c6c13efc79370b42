"""Runs handed to the spool are stored by the ingester or by the next reader."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from greenml.run.spool import claimed_file, ingest_pending, main, write_spool
from greenml.store import open_store
from greenml.store.url import resolve_url


@pytest.fixture(autouse=True)
def spool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "spool"
    monkeypatch.setenv("GREENML_SPOOL_DIR", str(folder))
    return folder


def payload(db: Path, run_id: str = "abcdef012345") -> dict[str, object]:
    energy = {
        "total_j": 30.0,
        "total_kwh": 30.0 / 3.6e6,
        "uncertainty_rel": 0.3,
        "components": {
            "cpu": {
                "energy_j": 30.0, "method": "estimated", "uncertainty_rel": 0.3,
                "devices": {"cpu0": {"energy_j": 30.0, "method": "estimated",
                                     "uncertainty_rel": 0.3, "name": "CPU model"}},
            }
        },
    }  # fmt: skip
    return {
        "version": 1,
        "db_url": resolve_url(str(db)),
        "run": {"run_id": run_id, "name": "spooled", "command": ["true"], "tags": {"k": "v"},
                "started_at": 1.7e9, "pid": 999999, "hostname": None},
        "include_hostname": False,
        "cwd": None,
        "environment": {"python": {"version": "3.11.7"}},
        "measured_devices": {"cpu0": {"method": "estimated", "uncertainty_rel": 0.3}},
        "samples": [["cpu0", "cpu", 1.7e9 + i, 10.0, {"utilization": 0.5}] for i in range(4)],
        "window": {"name": "run", "started_at": 1.7e9, "duration_s": 3.0, "energy": energy},
        "finish": {"status": "completed", "exit_code": 0, "duration_s": 3.0,
                   "ended_at": 1.7e9 + 3, "energy": {**energy, "notes": ["a note"]}},
    }  # fmt: skip


def test_a_reader_stores_pending_runs_first(tmp_path: Path, spool: Path) -> None:
    db = tmp_path / "runs.db"
    write_spool(payload(db))
    write_spool(payload(tmp_path / "other.db", run_id="0123456789ab"))  # not for this store
    with open_store(str(db)) as store:
        assert ingest_pending(store, str(db)) == 1
        record = store.get_record("abcdef012345")
        assert len(store.samples("abcdef012345")) == 4
    assert record["status"] == "completed"
    assert record["tags"] == {"k": "v"}
    assert record["energy"]["notes"] == ["a note"]
    assert record["energy"]["components"]["cpu"]["method"] == "estimated"
    assert record["windows"][0]["energy_j"] == 30.0
    assert record["environment"] == {"python": {"version": "3.11.7"}}
    assert [p.name for p in spool.iterdir()] == ["0123456789ab.json"]


def test_the_detached_writer_stores_the_run(tmp_path: Path, spool: Path) -> None:
    db = tmp_path / "runs.db"
    path = write_spool(payload(db))
    assert main([str(path)]) == 0
    assert list(spool.iterdir()) == []
    with open_store(str(db)) as store:
        assert store.get_record("abcdef")["name"] == "spooled"


def test_a_store_that_fails_keeps_the_spool_file(tmp_path: Path, spool: Path) -> None:
    bad = tmp_path / "not-a-db"
    bad.write_bytes(os.urandom(2048))
    path = write_spool(payload(bad))
    assert main([str(path)]) == 1
    assert path.exists()  # given back, to be stored when the database works


def test_a_claim_of_a_dead_process_is_taken_over(tmp_path: Path, spool: Path) -> None:
    db = tmp_path / "runs.db"
    path = write_spool(payload(db))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    stale = path.with_name(f"{path.name}.{dead.stdout.strip()}.claim")
    os.rename(path, stale)
    with open_store(str(db)) as store:
        assert ingest_pending(store, str(db)) == 1
        assert store.get_record("abcdef")["status"] == "completed"


def test_a_live_claim_is_waited_for_not_taken(tmp_path: Path, spool: Path) -> None:
    db = tmp_path / "runs.db"
    path = write_spool(payload(db))
    with claimed_file(path) as held:
        assert held is not None and held.name.endswith(f".{os.getpid()}.claim")
        with claimed_file(held) as again:
            assert again is None  # locked by a live holder (this one)
        started = time.monotonic()
        with open_store(str(db)) as store:
            assert ingest_pending(store, str(db), wait_s=0.3) == 0
        assert time.monotonic() - started >= 0.3


def test_a_stale_claim_whose_pid_was_reused_is_taken_over_at_once(
    tmp_path: Path, spool: Path
) -> None:
    """The claim names a pid that is alive again (here: this very process), but nobody
    holds its lock: a reader takes it over without waiting."""
    db = tmp_path / "runs.db"
    path = write_spool(payload(db))
    stale = path.with_name(f"{path.name}.{os.getpid()}.claim")
    os.rename(path, stale)
    started = time.monotonic()
    with open_store(str(db)) as store:
        assert ingest_pending(store, str(db), wait_s=10.0) == 1
    assert time.monotonic() - started < 5.0


def test_a_file_the_store_refuses_is_quarantined_and_blocks_nothing(
    tmp_path: Path, spool: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "runs.db"
    bad = payload(db, run_id="badbadbadbad")
    bad["run"] = {**bad["run"], "name": "arg\udcff"}  # type: ignore[dict-item]
    write_spool(bad)
    write_spool(payload(db))
    with open_store(str(db)) as store:
        assert ingest_pending(store, str(db)) == 1  # the good run
        assert ingest_pending(store, str(db)) == 0  # nothing left to block a reader
        assert [r["id"] for r in store.list_runs()] == ["abcdef012345"]
    kept = spool / "quarantine" / "badbadbadbad.json"
    assert kept.exists() and kept.with_suffix(".reason.txt").read_text().strip()
    assert sum("moved to" in r.getMessage() for r in caplog.records) == 1
    listed = subprocess.run([sys.executable, "-m", "greenml", "runs", "list", "--db", str(db)],
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, "GREENML_SPOOL_DIR": str(spool)})  # fmt: skip
    assert listed.returncode == 0 and "Traceback" not in listed.stderr


def test_no_password_in_a_spool_file_and_the_files_are_private(
    tmp_path: Path, spool: Path
) -> None:
    data = payload(tmp_path / "x.db")
    data["db_url"] = "postgresql+psycopg://u:s3cret@127.0.0.1:1/test"
    path = write_spool(data)
    text = path.read_text()
    assert "s3cret" not in text and "postgresql+psycopg://u@127.0.0.1:1/test" in text
    assert path.stat().st_mode & 0o777 == 0o600
    assert spool.stat().st_mode & 0o777 == 0o700


def test_an_unwritable_spool_falls_back_to_the_temp_dir_loudly_and_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import tempfile

    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("GREENML_SPOOL_DIR", str(blocked / "spool"))  # cannot be a folder
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)  # no runtime folder: the temp dir
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    path = write_spool(payload(tmp_path / "runs.db"))
    assert path.parent == tmp_path / "tmp" / f"greenml-spool-{os.getuid()}"
    assert any("waits in" in r.getMessage() for r in caplog.records)
    with open_store(str(tmp_path / "runs.db")) as store:  # readers look there too
        assert ingest_pending(store, str(tmp_path / "runs.db")) == 1
    broken = payload(tmp_path / "runs.db", run_id="0123456789ab")
    broken["finish"] = {**broken["finish"], "duration_s": float("nan")}  # type: ignore[dict-item]
    with pytest.raises(ValueError):
        write_spool(broken)
    assert [p.name for p in path.parent.iterdir()] == []  # no .tmp file left behind


def test_greenml_run_is_visible_right_after_it_returns(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    env = {**os.environ, "GREENML_DB": str(db)}
    cmd = [sys.executable, "-m", "greenml"]
    for _ in range(3):
        done = subprocess.run([*cmd, "run", "-q", "--", "true"], env=env, timeout=60)
        assert done.returncode == 0
    listed = subprocess.run([*cmd, "runs", "list", "--json"], env=env, capture_output=True,
                            text=True, timeout=60)  # fmt: skip
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert len(rows) == 3
    assert {r["status"] for r in rows} == {"completed"}
    shown = subprocess.run([*cmd, "runs", "export", rows[0]["id"]], env=env, capture_output=True,
                           text=True, timeout=60)  # fmt: skip
    record = json.loads(shown.stdout)
    assert record["environment"]["python"]["version"]
    assert record["measured_devices"]


def _planted_spool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temp-dir fallback made first by another user (uid 4242), mode 0777."""
    import tempfile

    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    planted = tmp_path / "tmp" / f"greenml-spool-{os.getuid()}"
    planted.mkdir(parents=True)
    os.chmod(planted, 0o777)
    if os.getuid() == 0:
        os.chown(planted, 4242, 4242)
    return planted


def test_a_spool_folder_planted_by_another_user_is_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "runs.db"
    planted = _planted_spool(tmp_path, monkeypatch)
    forged = payload(db, run_id="f0f0f0f0f0f0")
    forged["run"] = {**forged["run"], "command": ["rm", "-rf", "/"]}  # type: ignore[dict-item]
    (planted / "f0f0f0f0f0f0.json").write_text(json.dumps(forged))
    with open_store(str(db)) as store:
        assert ingest_pending(store, str(db)) == 0
        assert store.list_runs() == []


def test_a_spool_file_of_another_user_in_our_spool_is_not_read(
    tmp_path: Path, spool: Path
) -> None:
    if os.getuid() != 0:
        pytest.skip("making a file of another user needs root (the CI runs as root)")
    db = tmp_path / "runs.db"
    path = write_spool(payload(db))
    os.chown(path, 4242, 4242)
    with open_store(str(db)) as store:
        assert ingest_pending(store, str(db)) == 0


def test_a_planted_fallback_is_not_written_to_either(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from greenml.errors import StoreError

    planted = _planted_spool(tmp_path, monkeypatch)
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("GREENML_SPOOL_DIR", str(blocked / "spool"))
    with pytest.raises(StoreError, match=r"not to you|open to other users"):
        write_spool(payload(tmp_path / "runs.db"))
    assert list(planted.iterdir()) == []


def test_the_fallback_lives_in_the_session_runtime_folder_when_there_is_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = tmp_path / "run-user"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("GREENML_SPOOL_DIR", str(blocked / "spool"))
    path = write_spool(payload(tmp_path / "runs.db"))
    assert path.parent == runtime / "greenml-spool"

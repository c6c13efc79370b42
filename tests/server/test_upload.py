"""Finished runs go to a real server process; when it is down or killed mid-upload they
wait and go up later, never lost and never stored twice."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from greenml.cli import main
from greenml.run.persist import FinishedRun, persist_run
from greenml.run.upload import pending_markers, upload_after_persist
from greenml.store import access, open_store
from tests.run.test_spool import payload
from tests.server.helpers import T0, local_document
from tests.server.live import LiveServer, free_port

pytest.importorskip("uvicorn")


@pytest.fixture
def live(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveServer]:
    server_db = f"sqlite:///{tmp_path / 'server.db'}"
    with open_store(server_db) as store:
        token = access.create_token(store, "team", "write")
    server = LiveServer(server_db, free_port(), tmp_path / "server.log")
    monkeypatch.setenv("GREENML_SERVER", server.url)
    monkeypatch.setenv("GREENML_TOKEN", token)
    monkeypatch.setenv("GREENML_SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("GREENML_LEDGER", str(tmp_path / "local.ledger.jsonl"))
    yield server
    server.stop()


def _server_runs(server: LiveServer) -> dict[str, int]:
    """Run id → stored sample count, read from the server's database itself."""
    with open_store(server.db_url) as store:
        return {r["id"]: len(store.samples(r["id"])) for r in store.list_runs(limit=0)}


def test_a_persisted_run_is_sent_with_its_ledger_entry(live: LiveServer, tmp_path: Path) -> None:
    live.start()
    local = tmp_path / "local.db"
    with open_store(str(local)) as store:
        persist_run(store, FinishedRun.from_dict(payload(local)))
    assert _server_runs(live) == {"abcdef012345": 4}
    assert pending_markers() == []
    import os

    import httpx

    headers = {"Authorization": f"Bearer {os.environ['GREENML_TOKEN']}"}
    got = httpx.get(f"{live.url}/api/v1/runs/abcdef012345?points=0", headers=headers).json()
    assert got["ledger"]["matches"] is True  # the record arrived exactly as ledgered


def test_server_down_then_push(live: LiveServer, tmp_path: Path) -> None:
    local = tmp_path / "local.db"
    with open_store(str(local)) as store:
        persist_run(store, FinishedRun.from_dict(payload(local)))  # nobody listens yet
        assert store.get_record("abcdef012345")["status"] == "completed"  # kept locally
    assert [p.name for p in pending_markers()] == ["abcdef012345.json"]
    live.start()
    assert main(["push", "--db", str(local)]) == 0
    assert pending_markers() == []
    assert main(["push", "--db", str(local), "abcdef012345"]) == 0  # again: stored once
    assert _server_runs(live) == {"abcdef012345": 4}


def test_server_killed_mid_upload_loses_nothing_and_stores_once(
    live: LiveServer, tmp_path: Path
) -> None:
    import psutil

    live.start()
    doc = local_document(tmp_path, name="big", seconds=3000, gpus=8)  # 24,000 samples
    mine = tmp_path / f"local-big-{T0}.db"  # where local_document stored the run
    with open_store(str(mine)) as store:
        run_id = doc["record"]["id"]
        proc = psutil.Process(live.process.pid)  # type: ignore[union-attr]
        busy_from = sum(proc.cpu_times()[:2])
        sender = threading.Thread(target=upload_after_persist, args=(store, run_id, None))
        sender.start()
        deadline = time.monotonic() + 60
        while sum(proc.cpu_times()[:2]) - busy_from < 0.1 and time.monotonic() < deadline:
            time.sleep(0.01)  # the server is reading or storing the upload
        live.kill()
        sender.join(timeout=120)
        assert not sender.is_alive()
        killed_before_commit = bool(pending_markers())
        live.start()  # the same database, after the crash
        assert main(["push", "--db", str(mine)]) == 0
    assert pending_markers() == []
    assert _server_runs(live) == {run_id: 24000}  # complete, once
    print("killed before the commit:", killed_before_commit)


def test_greenml_run_sends_the_run(live: LiveServer, tmp_path: Path) -> None:
    """`greenml run --server URL -- COMMAND` from another shell: the run is on the server."""
    import os
    import subprocess
    import sys

    from tests.server.live import SRC

    live.start()
    env = {**os.environ, "PYTHONPATH": str(SRC), "CI": "true"}  # sent before greenml returns
    env.pop("GREENML_SERVER")  # the option alone names the server
    done = subprocess.run(
        [sys.executable, "-m", "greenml", "run", "-q", "--server", live.url,
         "--db", str(tmp_path / "mine.db"), "--name", "train",
         "--json-out", str(tmp_path / "run.json"), "--", sys.executable, "-c", "pass"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with open_store(live.db_url) as store:
        (summary,) = store.list_runs(limit=0)
    assert summary["name"] == "train" and summary["status"] == "completed"


def test_a_short_run_with_a_server_is_sent_before_greenml_run_returns(
    live: LiveServer, tmp_path: Path
) -> None:
    """Issue 29: `greenml run --server URL -- true` ended before the store was open, was left
    to a detached writer and was not sent at its end (a CI job ending there never sent it).
    Now it is stored and sent before greenml returns, and one line says so."""
    import os
    import subprocess
    import sys

    from tests.server.live import SRC

    live.start()
    env = {**os.environ, "PYTHONPATH": str(SRC), "CI": "true"}  # a CI job: nothing detached
    env.pop("GREENML_SERVER")
    done = subprocess.run(
        [sys.executable, "-m", "greenml", "run", "--server", live.url,
         "--db", str(tmp_path / "mine.db"), "--", "true"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(_server_runs(live)) == 1  # at once: nothing left to a detached writer
    said = [line for line in done.stderr.splitlines() if f"sent to {live.url}" in line]
    assert len(said) == 1 and said[0].startswith("greenml: run "), done.stderr

"""`greenml run --server` returns without waiting for the upload, and the run still arrives:
a real server process paused (slow) or not started (down)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from greenml.cli import main
from greenml.run.upload import pending_markers
from greenml.run.upload_later import EPHEMERAL_ENV, upload_in_background
from greenml.store import open_store
from tests.server.live import SRC, LiveServer
from tests.server.test_upload import _server_runs, live  # noqa: F401 - the fixture

pytest.importorskip("uvicorn")

BELOW_CLIENT_TIMEOUT_S = 25.0
"""Under the team client's 30 s read timeout: a greenml run that waited for the paused
server's answer could not have returned within it."""


def _run(tmp_path: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    for name in EPHEMERAL_ENV:  # a workstation: the machine outlives greenml
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "greenml", "run", "--server", url, "--db",
         str(tmp_path / "mine.db"), *extra, "--", "true"],
        env=env, capture_output=True, text=True, timeout=BELOW_CLIENT_TIMEOUT_S, check=False,
    )  # fmt: skip


def _local_ids(tmp_path: Path) -> set[str]:
    with open_store(str(tmp_path / "mine.db")) as store:
        return {r["id"] for r in store.list_runs(limit=0)}


def _wait_for(check: object, seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("extra", [(), ("--json-out", "run.json")],
                         ids=["spooled", "stored-in-process"])  # fmt: skip
def test_a_paused_server_does_not_hold_the_run_and_the_run_arrives(
    live: LiveServer, tmp_path: Path, extra: tuple[str, ...]  # noqa: F811
) -> None:
    live.start()
    assert live.process is not None
    extra = tuple(str(tmp_path / e) if e.endswith(".json") else e for e in extra)
    os.kill(live.process.pid, signal.SIGSTOP)  # accepts connections, answers nothing
    try:
        done = _run(tmp_path, live.url, *extra)
    finally:
        os.kill(live.process.pid, signal.SIGCONT)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    # arrives from the detached sender, or waits (marker) for the next push: never lost
    if not _wait_for(lambda: len(_server_runs(live)) == 1, 45.0):
        assert _wait_for(lambda: len(_local_ids(tmp_path)) == 1)
        assert main(["push", "--db", str(tmp_path / "mine.db")]) == 0
    (run_id,) = _server_runs(live)
    assert _local_ids(tmp_path) == {run_id}
    assert _wait_for(lambda: pending_markers() == [], 30.0)


def test_a_server_that_is_down_gets_the_run_when_it_is_back(
    live: LiveServer, tmp_path: Path  # noqa: F811
) -> None:
    done = _run(tmp_path, live.url)  # nobody listens on the port yet
    assert done.returncode == 0, done.stderr
    assert _wait_for(lambda: len(_local_ids(tmp_path)) == 1)  # stored locally by the writer
    assert _wait_for(lambda: len(pending_markers()) == 1)  # and marked as waiting
    live.start()
    assert main(["push", "--db", str(tmp_path / "mine.db")]) == 0
    assert set(_server_runs(live)) == _local_ids(tmp_path)
    assert pending_markers() == []


@pytest.mark.parametrize("name", EPHEMERAL_ENV)
def test_where_the_machine_may_end_with_greenml_the_upload_is_not_detached(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for other in EPHEMERAL_ENV:
        monkeypatch.delenv(other, raising=False)
    assert upload_in_background()
    monkeypatch.setenv(name, "1")
    assert not upload_in_background()
    monkeypatch.setenv(name, "false")
    assert upload_in_background()

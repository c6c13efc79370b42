"""``savings plan --server``: the project's runs read from a real team server process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from greenml.store import access, open_store
from greenml.store.transfer import export_run, import_run
from tests.helpers import greenml_cli
from tests.savings.project import plant

pytest.importorskip("uvicorn")
from tests.server.live import LiveServer, free_port


def test_plan_reads_the_team_server(tmp_path: Path) -> None:
    local = tmp_path / "local.db"
    with open_store(str(local)) as store:
        plant(store)
        documents = [export_run(store, r["id"]) for r in store.list_runs(limit=0)]
    server_db = f"sqlite:///{tmp_path / 'server.db'}"
    with open_store(server_db) as store:
        project = access.ensure_project(store, "vision")
        for document in documents:
            assert import_run(store, document, project)
        token = access.create_token(store, "vision", "read")
    server = LiveServer(server_db, free_port(), tmp_path / "server.log").start()
    try:
        done = greenml_cli("savings", "plan", "--server", server.url, "--format", "json",
                           GREENML_TOKEN=token, XDG_CONFIG_HOME=str(tmp_path / "xdg"))  # fmt: skip
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["footprint"]["runs"] == 10 and server.url in plan["scope"]
    ids = {i["id"] for i in plan["items"]}
    # from records alone: the power limit and the green hours; no samples → no idle finding
    assert {"gpu-power-nvidia-a100", "green-hours-us-cal-ciso"} <= ids
    assert "idle-gpu" not in ids

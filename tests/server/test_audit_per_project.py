"""The audit's CI-gate item on a team server counts only the verdicts of its own project."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.server.conftest import Server
from tests.server.helpers import local_document


def _ci_gate(server: Server, project: str, run_id: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {server.tokens[f'{project}-read']}"}
    answer = server.client.get(
        f"/api/v1/projects/{project}/reports/audit?run={run_id}&format=json", headers=headers
    )
    assert answer.status_code == 200, answer.text
    items = answer.json()["data"]["items"]
    return next(i for i in items if i["key"] == "ci-gate")


def test_ci_gate_verdicts_are_not_shared_by_every_project_of_a_server(
    server: Server, tmp_path: Path
) -> None:
    from greenml.store import open_store

    ids = {}
    for project in ("A", "B"):
        doc = local_document(tmp_path, name=f"train-{project}", start=1714564800.0 + len(ids))
        sent = server.client.post("/api/v1/runs", json=doc, headers={
            "Authorization": f"Bearer {server.tokens[f'{project}-write']}"})  # fmt: skip
        assert sent.status_code == 201
        ids[project] = doc["record"]["id"]
    with open_store(server.url) as store:  # `greenml check --db SERVER-DB` on A's runs
        store.put_state("gate", "verdicts", {"verdicts": [
            {"outcome": "pass", "baseline_runs": [ids["A"]], "candidate_runs": [ids["A"]],
             "checked_at": "2024-05-02T00:00:00+00:00"},
            {"outcome": "pass", "baseline_runs": ["notstored"], "candidate_runs": [],
             "checked_at": "2024-05-03T00:00:00+00:00"},
        ]})  # fmt: skip
    a = _ci_gate(server, "A", ids["A"])
    assert a["status"] == "passed" and "1 verdict(s) stored" in a["evidence"]
    b = _ci_gate(server, "B", ids["B"])
    assert b["status"] == "failed", b  # A's CI gate is no evidence for B

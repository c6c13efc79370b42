"""``GET /api/v1/jobs`` and ``/api/v1/jobs/{id}``: a project's jobs, the JSON of ``jobs show``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from greenml.jobs.summary import summarize_job
from greenml.store import access, open_store
from greenml.store.jobs import job_runs
from greenml.store.transfer import import_run
from tests.server.conftest import Server
from tests.server.helpers import T0, local_document


def node_document(folder: Path, job_id: str, rank: int, *, gpu_j: float,
                  expected: int = 3, job_name: str = "bert") -> dict[str, Any]:  # fmt: skip
    """The upload of node ``rank``'s run of ``job_id`` (a ``job`` block as ``greenml run``'s)."""
    doc = local_document(folder, name=f"{job_id}-node{rank}", gpu_j=gpu_j, start=T0 + rank)
    doc["record"]["job"] = {
        "job_id": job_id, "source": "option", "job_name": job_name, "node": f"node-{rank}",
        "node_rank": rank, "expected_nodes": expected,
    }  # fmt: skip
    return doc


def _upload(server: Server, token: str, doc: dict[str, Any]) -> None:
    headers = {"Authorization": f"Bearer {server.tokens[token]}"}
    response = server.client.post("/api/v1/runs", json=doc, headers=headers)
    assert response.status_code == 201, response.text


def _get(server: Server, token: str, path: str) -> Any:
    headers = {"Authorization": f"Bearer {server.tokens[token]}"}
    return server.client.get(path, headers=headers)


def test_the_same_job_id_in_two_projects_stays_two_jobs(server: Server, tmp_path: Path) -> None:
    a_docs = [node_document(tmp_path, "train-1", r, gpu_j=1000.0 * (r + 1)) for r in (0, 1)]
    b_doc = node_document(tmp_path, "train-1", 0, gpu_j=50_000.0, job_name="b-job")
    for doc in a_docs:
        _upload(server, "A-write", doc)
    _upload(server, "B-write", b_doc)

    a_job = _get(server, "A-read", "/api/v1/jobs/train-1").json()
    assert [n["run_id"] for n in a_job["nodes"]] == [d["record"]["id"] for d in a_docs]
    assert a_job["job_name"] == "bert" and a_job["missing_nodes"] == [2]
    node_j = [n["energy_j"] for n in a_job["nodes"]]
    assert a_job["energy"]["total_j"] == sum(node_j) and node_j[1] > node_j[0]
    b_job = _get(server, "B-read", "/api/v1/jobs/train-1").json()
    assert [n["run_id"] for n in b_job["nodes"]] == [b_doc["record"]["id"]]
    assert b_job["job_name"] == "b-job" and b_job["energy"]["total_j"] > a_job["energy"]["total_j"]

    listed = _get(server, "A-read", "/api/v1/jobs").json()
    assert listed["project"] == "A" and [j["job_id"] for j in listed["jobs"]] == ["train-1"]
    assert listed["jobs"][0]["energy"] == a_job["energy"]
    assert set(listed["jobs"][0]) < set(a_job)  # a listing line is a part of the job's JSON

    # one implementation: the server's JSON is what summarize_job makes of A's runs
    with open_store(server.url) as store:
        local = summarize_job("train-1", job_runs(store, "train-1", project_id=None))
        assert len(local.nodes) == 3  # the whole database holds both projects' runs ...
    with open_store(f"sqlite:///{tmp_path / 'a-only.db'}") as store:
        access.create_token(store, "solo", "write")
        for doc in a_docs:
            import_run(store, doc, access.project_id(store, "solo"))
        assert summarize_job("train-1", job_runs(store, "train-1")).to_dict() == a_job


def test_unknown_job_bad_limit_and_no_token_are_one_line(server: Server) -> None:
    missing = _get(server, "A-read", "/api/v1/jobs/nope")
    assert missing.status_code == 404 and "nope" in missing.json()["error"]
    assert _get(server, "A-read", "/api/v1/jobs?limit=0").status_code == 422
    assert server.client.get("/api/v1/jobs").status_code == 401  # type: ignore[attr-defined]
    assert _get(server, "A-read", "/api/v1/jobs").json() == {"project": "A", "jobs": []}


def test_the_dashboard_lists_jobs_and_shows_one_with_its_missing_node(
    server: Server, tmp_path: Path
) -> None:
    docs = [node_document(tmp_path, "bert/run 2", r, gpu_j=2000.0) for r in (0, 2)]
    for doc in docs:
        _upload(server, "A-write", doc)
    listed = _get(server, "A-read", "/jobs")
    assert listed.status_code == 200 and "bert%2Frun%202" in listed.text
    assert "2 of 3, 1 missing" in listed.text
    shown = _get(server, "A-read", "/jobs/bert%2Frun%202")
    assert shown.status_code == 200, shown.text
    assert "never reported (node ranks 1)" in shown.text
    assert all(f'href="/runs/{d["record"]["id"]}"' in shown.text for d in docs)
    assert "node-2" in shown.text and "kJ" in shown.text
    assert "<script" not in shown.text
    assert _get(server, "B-read", "/jobs/bert%2Frun%202").status_code == 404

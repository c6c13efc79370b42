"""``GET /api/v1/diagnosis/jobs/{id}``: a job's diagnosis over the token's project only."""

from __future__ import annotations

from pathlib import Path

from tests.server.conftest import Server
from tests.server.test_jobs_api import _get, _upload, node_document


def test_a_jobs_diagnosis_reads_its_own_projects_runs_only(server: Server, tmp_path: Path) -> None:
    for rank in (0, 1):  # A's job of two nodes
        _upload(server, "A-write", node_document(tmp_path, "a-2", rank, gpu_j=1000.0, expected=2))
    # B runs the same job name at 1 node: A's scaling must not see it
    _upload(server, "B-write", node_document(tmp_path, "b-1", 0, gpu_j=500.0, expected=1))

    found = _get(server, "A-read", "/api/v1/diagnosis/jobs/a-2")
    assert found.status_code == 200, found.text
    body = found.json()
    assert body["job_id"] == "a-2" and body["nodes"] == 2
    assert body["energy"] == _get(server, "A-read", "/api/v1/jobs/a-2").json()["energy"]
    assert body["scaling"] is None
    assert any("one node count only" in note for note in body["notes"]), body["notes"]
    assert _get(server, "B-read", "/api/v1/diagnosis/jobs/a-2").status_code == 404
    page = _get(server, "A-read", "/jobs/a-2")
    assert page.status_code == 200 and "<h2>Diagnosis</h2>" in page.text

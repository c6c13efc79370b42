"""A token of project B can neither read nor write project A, on every endpoint.

The table below names every route of the app; a new route without a row fails
:func:`test_every_route_is_checked`.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.server.conftest import Server
from tests.server.helpers import local_document

# route path → requests made with B's token against A's data, and the statuses allowed
CHECKS = {
    "/api/v1/runs": [("GET", "/api/v1/runs?project=A", (403,)),
                     ("POST", "/api/v1/runs", (409,))],
    "/api/v1/runs/{run_id}": [("GET", "/api/v1/runs/{A}", (404,)),
                              ("GET", "/api/v1/runs/{A}?project=A", (403,))],
    "/api/v1/jobs": [("GET", "/api/v1/jobs?project=A", (403,)), ("GET", "/api/v1/jobs", (200,))],
    "/api/v1/jobs/{job_id:path}": [("GET", "/api/v1/jobs/job-of-A", (404,)),
                              ("GET", "/api/v1/jobs/job-of-A?project=A", (403,))],
    "/api/v1/whoami": [("GET", "/api/v1/whoami", (200,))],
    "/api/v1/projects/{project}/aggregates": [("GET", "/api/v1/projects/A/aggregates", (403,))],
    "/api/v1/projects/{project}/reports/{kind}": [
        ("GET", "/api/v1/projects/A/reports/statement?run={A}", (403,)),
        ("GET", "/api/v1/projects/B/reports/statement?run={A}", (404,))],
    "/api/v1/projects/{project}/tokens": [("POST", "/api/v1/projects/A/tokens?role=admin", (403,))],
    "/api/v1/openapi.json": [("GET", "/api/v1/openapi.json", (200,))],
    "/": [("GET", "/", (303,))],
    "/login": [("GET", "/login", (200,)), ("POST", "/login", (401,))],
    "/logout": [("POST", "/logout", (303,))],
    "/runs": [("GET", "/runs", (200,)), ("GET", "/runs?q=secret", (200,))],
    "/runs.csv": [("GET", "/runs.csv", (200,))],
    "/runs/{run_id}": [("GET", "/runs/{A}", (404,))],
    "/jobs": [("GET", "/jobs", (200,))],
    "/jobs/{job_id:path}": [("GET", "/jobs/job-of-A", (404,))],
    "/project": [("GET", "/project", (200,))],
    "/compare": [("GET", "/compare?a={A}&b={A}", (200,)),
                 ("GET", "/compare?item={A}&item={A}&item={A}", (200,))],
    "/charts": [("GET", "/charts", (200,)), ("GET", "/charts?by=tag&key=team", (200,))],
    "/runs/saved": [("POST", "/runs/saved", (403,))],
    "/runs/saved/delete": [("POST", "/runs/saved/delete", (403,))],
    "/download/{kind}": [("GET", "/download/statement?run={A}", (404,))],
}  # fmt: skip


def test_every_route_is_checked(server: Server) -> None:
    app = server.client.app  # type: ignore[attr-defined]
    paths = {r.path for r in app.routes if getattr(r, "methods", None)} - {"/api/v1/openapi.json"}
    assert paths <= set(CHECKS), f"routes without an isolation check: {paths - set(CHECKS)}"


def test_project_b_never_sees_or_touches_project_a(server: Server, tmp_path: Path) -> None:
    doc = local_document(tmp_path, name="secret-run-of-A", tags={"team": "a-only"})
    doc["record"]["job"] = {"job_id": "job-of-A", "source": "option", "node": "a-node-0",
                            "job_name": "secret-job-of-A", "node_rank": 0}  # fmt: skip
    a_id = doc["record"]["id"]
    headers_a = {"Authorization": f"Bearer {server.tokens['A-write']}"}
    assert server.client.post("/api/v1/runs", json=doc, headers=headers_a).status_code == 201
    for role in ("read", "write", "admin"):
        headers = {"Authorization": f"Bearer {server.tokens[f'B-{role}']}"}
        for checks in CHECKS.values():
            for method, path, allowed in checks:
                url = path.replace("{A}", a_id)
                body = doc if method == "POST" and url == "/api/v1/runs" else None
                response = server.client.request(method, url, json=body, headers=headers,
                                                 follow_redirects=False)  # fmt: skip
                if role == "read" and url == "/api/v1/runs" and method == "POST":
                    allowed = (403,)  # a reader may not upload at all
                assert response.status_code in allowed, (role, method, url, response.text[:300])
                assert "secret-run-of-A" not in response.text, (role, url)
                assert "a-only" not in response.text, (role, url)
                assert "secret-job-of-A" not in response.text, (role, url)
                assert "a-node-0" not in response.text, (role, url)
    # and A's run is still A's, unchanged
    got = server.client.get(f"/api/v1/runs/{a_id}?points=0", headers=headers_a).json()
    assert got["project"] == "A" and got["record"]["name"] == "secret-run-of-A"
    job = server.client.get("/api/v1/jobs/job-of-A", headers=headers_a).json()
    assert job["job_name"] == "secret-job-of-A" and [n["run_id"] for n in job["nodes"]] == [a_id]


def test_a_session_cookie_is_scoped_like_its_token(server: Server, tmp_path: Path) -> None:
    doc = local_document(tmp_path, name="secret-run-of-A")
    server.client.post("/api/v1/runs", json=doc,
                       headers={"Authorization": f"Bearer {server.tokens['A-write']}"})  # fmt: skip
    signed = server.client.post("/login", data={"token": server.tokens["B-read"]},
                                follow_redirects=False)  # fmt: skip
    assert signed.status_code == 303
    assert "secret-run-of-A" not in server.client.get("/runs").text
    assert server.client.get(f"/runs/{doc['record']['id']}").status_code == 404
    csrf = re.search(r'name="csrf" value="([^"]+)"', server.client.get("/runs").text)
    assert csrf is not None  # the sign-out form carries the session's CSRF token
    server.client.post("/logout", data={"csrf": csrf.group(1)})
    assert server.client.get("/runs", follow_redirects=False).status_code == 401

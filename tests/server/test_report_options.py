"""Issue 29 item 1: the server opens no file named by a caller.

The label report's ``reference`` option names a reference table file; through the
server (``option=reference=/etc/shadow``, with a token or under ``--public-read``) it
must be refused as a file option, never opened. Overlong option values are refused too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.server.conftest import Server
from tests.server.helpers import local_document


def _auth(server: Server, who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.tokens[who]}"}


@pytest.mark.parametrize("target", ["/etc/shadow", "/dev/zero", "/proc/self/environ"])
def test_server_opens_no_path_named_by_a_report_option(
    server: Server, tmp_path: Path, target: str
) -> None:
    doc = local_document(tmp_path)
    assert server.client.post("/api/v1/runs", json=doc,
                              headers=_auth(server, "A-write")).status_code == 201  # fmt: skip
    got = server.client.get(
        f"/api/v1/projects/A/reports/label?run={doc['record']['id']}"
        f"&option=task_class=text&option=reference={target}",
        headers=_auth(server, "A-read"),
    )
    assert got.status_code == 400, got.text
    error = got.json()["error"]
    assert "names a file" in error and "\n" not in error
    assert "line" not in error  # nothing of the file was read back


def test_public_read_server_opens_no_path_either(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from greenml.server.app import create_app
    from greenml.store import access, open_store

    url = f"sqlite:///{tmp_path / 's.db'}"
    with open_store(url) as store:
        token = access.create_token(store, "open", "write")
    with TestClient(create_app(url, public_read=True)) as client:
        doc = local_document(tmp_path)
        assert client.post("/api/v1/runs", json=doc,
                           headers={"Authorization": f"Bearer {token}"}).status_code == 201
        got = client.get(f"/api/v1/projects/open/reports/label?run={doc['record']['id']}"
                         "&option=task_class=text&option=reference=/etc/passwd")  # fmt: skip
        assert got.status_code == 400 and "names a file" in got.json()["error"]


def test_overlong_report_options_are_refused(server: Server, tmp_path: Path) -> None:
    doc = local_document(tmp_path)
    server.client.post("/api/v1/runs", json=doc, headers=_auth(server, "A-write"))
    got = server.client.get(
        f"/api/v1/projects/A/reports/sci?run={doc['record']['id']}&option=per=" + "x" * 300,
        headers=_auth(server, "A-read"),
    )
    assert got.status_code == 400 and "longer than" in got.json()["error"]

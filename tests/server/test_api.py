"""The JSON API on SQLite and PostgreSQL: upload, list, one run, aggregates, reports, errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import Server
from tests.server.helpers import T0, local_document, renamed


def _auth(server: Server, who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.tokens[who]}"}


def _upload(server: Server, doc: dict[str, Any], who: str = "A-write") -> Any:
    return server.client.post("/api/v1/runs", json=doc, headers=_auth(server, who))


def test_upload_is_idempotent_and_reads_back(server: Server, tmp_path: Path) -> None:
    doc = local_document(tmp_path, tags={"team": "nlp"})
    first = _upload(server, doc)
    assert first.status_code == 201, first.text
    assert first.json() == {"id": doc["record"]["id"], "project": "A", "created": True}
    again = _upload(server, doc)
    assert again.status_code == 200 and again.json()["created"] is False
    got = server.client.get(f"/api/v1/runs/{doc['record']['id']}?points=10",
                            headers=_auth(server, "A-read")).json()  # fmt: skip
    assert got["record"]["energy"] == doc["record"]["energy"]
    assert [s["device"] for s in got["samples"]] == ["gpu0", "gpu1"]
    assert got["samples"][0]["count"] == 60 and len(got["samples"][0]["t"]) == 10
    # means of equal slices keep the average power
    full = doc["samples"][0]["power_w"]
    assert sum(got["samples"][0]["power_w"]) / 10 == pytest.approx(sum(full) / len(full))
    assert got["windows"][0]["measurement"]["components"]["gpu"]["method"] == "counter"
    assert got["upload"]["user"] == "alice"
    every = server.client.get(f"/api/v1/runs/{doc['record']['id']}?all_samples=true",
                              headers=_auth(server, "A-read")).json()  # fmt: skip
    assert every["samples"][1]["power_w"] == doc["samples"][1]["power_w"]


def test_ledger_entry_is_checked_against_the_stored_record(server: Server, tmp_path: Path) -> None:
    from greenml.ledger.canonical import record_sha256

    doc = local_document(tmp_path)
    doc["ledger_entry"] = {"seq": 3, "record_sha256": record_sha256(doc["record"])}
    _upload(server, doc)
    ledger = server.client.get(f"/api/v1/runs/{doc['record']['id']}?points=0",
                               headers=_auth(server, "A-read")).json()["ledger"]  # fmt: skip
    assert ledger["matches"] is True and ledger["entry"]["seq"] == 3


def test_list_filters_and_cursor(server: Server, tmp_path: Path) -> None:
    base = local_document(tmp_path, tags={"team": "nlp"})
    for i in range(5):
        extra = {"tags": {"team": "vision" if i % 2 else "nlp"}, "name": f"job{i % 2}",
                 "started_at": f"2024-05-0{i + 1}T00:00:00+00:00"}  # fmt: skip
        assert _upload(server, renamed(base, f"run{i}", **extra)).status_code == 201
    get = lambda **q: server.client.get("/api/v1/runs", params=q,  # noqa: E731
                                        headers=_auth(server, "A-read"))  # fmt: skip
    assert [r["id"] for r in get(tag="team=vision").json()["runs"]] == ["run3", "run1"]
    named = get(name="job0", since="2024-05-02").json()["runs"]
    assert [r["id"] for r in named] == ["run4", "run2"]
    assert get(until=str(T0 - 86400 * 365)).json()["runs"] == []
    assert get(user="bob").json()["runs"] == []
    assert len(get(status="completed").json()["runs"]) == 5
    page = get(limit=2).json()
    ids = [r["id"] for r in page["runs"]]
    while page["next_cursor"]:
        page = get(limit=2, cursor=page["next_cursor"]).json()
        ids += [r["id"] for r in page["runs"]]
    assert ids == ["run4", "run3", "run2", "run1", "run0"]
    bad = get(tag="no-equals")
    assert bad.status_code == 400 and "KEY=VALUE" in bad.json()["error"]
    assert get(status="weird").status_code == 400
    assert get(cursor="!!").status_code == 400


def test_aggregates_per_week_with_uncertainty_and_shares(server: Server, tmp_path: Path) -> None:
    doc = local_document(tmp_path)
    _upload(server, doc)
    _upload(server, renamed(doc, "nocarbon", carbon=None))
    out = server.client.get("/api/v1/projects/A/aggregates?period=week",
                            headers=_auth(server, "A-read")).json()  # fmt: skip
    (week,) = out["buckets"]
    assert week["period_start"] == "2024-04-29" and week["runs"] == 2
    assert week["energy_j"] == pytest.approx(2 * 12900.0)
    assert week["energy_uncertainty_j"] > 0
    assert week["measured_share"] == pytest.approx(12000 / 12900)
    assert week["co2_g"] == pytest.approx(250.0) and week["co2_known_runs"] == 1
    assert out["top_runs"][0]["energy_j"] == pytest.approx(12900.0)
    day = server.client.get("/api/v1/projects/A/aggregates?period=day",
                            headers=_auth(server, "A-read")).json()  # fmt: skip
    assert day["buckets"][0]["period_start"] == "2024-05-01"


@pytest.mark.parametrize("fmt", ["md", "html", "json"])
def test_reports_of_each_format(server: Server, tmp_path: Path, fmt: str) -> None:
    doc = local_document(tmp_path, tags={"exp": "a"})
    _upload(server, doc)
    got = server.client.get(f"/api/v1/projects/A/reports/statement?run={doc['record']['id']}"
                            f"&format={fmt}", headers=_auth(server, "A-read"))  # fmt: skip
    assert got.status_code == 200, got.text
    if fmt == "json":
        assert doc["record"]["id"] in json.dumps(got.json())
    elif fmt == "html":
        assert got.text.startswith("<!DOCTYPE html>") and "<svg" in got.text
    else:
        assert "statement" in got.text.lower()
    by_tag = server.client.get("/api/v1/projects/A/reports/sci?tag=exp=a&option=functional_unit=1",
                               headers=_auth(server, "A-read"))  # fmt: skip
    assert by_tag.status_code in (200, 400)  # sci may need options; either way one line
    if by_tag.status_code == 400:
        assert "\n" not in by_tag.json()["error"]


def test_bad_input_is_a_clear_4xx_and_writes_nothing(server: Server, tmp_path: Path) -> None:
    doc = local_document(tmp_path)
    headers = {**_auth(server, "A-write"), "Content-Type": "application/json"}
    cases = {
        "malformed": (server.client.post("/api/v1/runs", content=b"{not json",
                                         headers=headers), 400, "malformed JSON"),
        "schema": (_upload(server, renamed(doc, "x1", duration_s="long")), 422, "duration_s"),
        "format": (_upload(server, {**doc, "format": 9}), 400, "format"),
        "oversized": (server.client.post("/api/v1/runs", content=b"[" + b"1," * 1_100_000 + b"1]",
                                         headers=headers), 413, "limit"),
        "no token": (server.client.post("/api/v1/runs", json=doc), 401, "token"),
        "wrong token": (server.client.post("/api/v1/runs", json=doc,
                                           headers={"Authorization": "Bearer gml_nope"}),
                        401, "unknown token"),
        "read token": (_upload(server, doc, "A-read"), 403, "role"),
        "unknown project": (server.client.get("/api/v1/projects/Z/aggregates",
                                              headers=_auth(server, "A-read")), 403, "project"),
    }  # fmt: skip
    for what, (response, status, words) in cases.items():
        assert response.status_code == status, (what, response.text)
        error = response.json()["error"]
        assert words in error and "\n" not in error, what
    listed = server.client.get("/api/v1/runs", headers=_auth(server, "A-read")).json()
    assert listed["runs"] == []


def test_public_read_needs_no_token_but_uploads_do(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from greenml.server.app import create_app
    from greenml.store import access, open_store

    url = f"sqlite:///{tmp_path / 's.db'}"
    with open_store(url) as store:
        token = access.create_token(store, "open", "write")
    with TestClient(create_app(url, public_read=True)) as client:
        doc = local_document(tmp_path)
        assert client.post("/api/v1/runs", json=doc).status_code == 401
        assert client.post("/api/v1/runs", json=doc,
                           headers={"Authorization": f"Bearer {token}"}).status_code == 201
        assert len(client.get("/api/v1/runs?project=open").json()["runs"]) == 1
        assert client.get("/api/v1/runs?project=nope").status_code == 404
        assert "Runs of open" in client.get("/runs?project=open").text  # the dashboard too
        assert client.get("/runs").status_code == 401  # no project named, no token


def test_openapi_describes_the_api(server: Server) -> None:
    spec = server.client.get("/api/v1/openapi.json").json()
    assert {"/api/v1/runs", "/api/v1/runs/{run_id}", "/api/v1/projects/{project}/aggregates",
            "/api/v1/projects/{project}/reports/{kind}"} <= set(spec["paths"])  # fmt: skip
    assert "requestBody" in spec["paths"]["/api/v1/runs"]["post"]


def test_run_ids_are_exact_not_prefixes(server: Server, tmp_path: Path) -> None:
    doc = local_document(tmp_path)
    for run_id in ("r1", "r10", "r11"):
        _upload(server, renamed(doc, run_id))
    got = server.client.get("/api/v1/runs/r1?points=0", headers=_auth(server, "A-read"))
    assert got.status_code == 200 and got.json()["record"]["id"] == "r1"
    assert server.client.get("/api/v1/runs/r", headers=_auth(server, "A-read")).status_code == 404

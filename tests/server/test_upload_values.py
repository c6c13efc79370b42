"""Upload data errors are a one-line 4xx, never an outage, and no answer names the database.

Values the store cannot hold (too long for a column, NUL, NaN, Infinity, 1e308, a
negative energy, an absurd year) are refused with 422 before anything is written,
on SQLite and on PostgreSQL alike; the project's reports keep working.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import Server
from tests.server.helpers import local_document

pytest.importorskip("fastapi")


def _headers(server: Server, key: str = "A-write") -> dict[str, str]:
    return {"Authorization": f"Bearer {server.tokens[key]}"}


def _names_the_database(server: Server, text: str) -> bool:
    secret = ("127.0.0.1:5432", "postgres", "sqlite", server.url.split("///")[-1])
    return any(s in text for s in secret)


def _mutate(doc: dict[str, Any], path: tuple[Any, ...], value: Any, run_id: str) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["record"]["id"] = run_id
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


JSON = "application/json"
TOO_LONG = "k" * 300
DATA_ERRORS: list[tuple[str, tuple[Any, ...], Any]] = [
    ("tag key over 255", ("record", "tags"), {TOO_LONG: "v"}),
    ("NUL in a tag value", ("record", "tags"), {"k": "a\x00b"}),
    ("NUL in the name", ("record", "name"), "train\x00"),
    ("window name over 255", ("windows", 0, "name"), TOO_LONG),
    ("device over 64", ("samples", 0, "device"), "gpu" * 40),
    ("component over 32", ("samples", 0, "component"), "c" * 40),
    ("NUL in the user", ("user",), "al\x00ice"),
]


@pytest.mark.parametrize(("why", "path", "value"), DATA_ERRORS, ids=[d[0] for d in DATA_ERRORS])
def test_upload_data_errors_are_4xx_not_503_and_never_name_the_database(
    server: Server, tmp_path: Path, why: str, path: tuple[Any, ...], value: Any
) -> None:
    doc = local_document(tmp_path, seconds=3, gpus=1)
    run_id = "bad" + str(abs(hash(why)) % 10**8)
    answer = server.client.post("/api/v1/runs", json=_mutate(doc, path, value, run_id),
                                headers=_headers(server))  # fmt: skip
    assert answer.status_code in (400, 422), (why, answer.status_code, answer.text)
    assert set(answer.json()) == {"error"} and "\n" not in answer.json()["error"]
    assert not _names_the_database(server, answer.text), answer.text
    got = server.client.get(f"/api/v1/runs/{run_id}", headers=_headers(server, "A-read"))
    assert got.status_code == 404  # nothing written
    fine = server.client.post("/api/v1/runs", json=_mutate(doc, ("user",), "bob", run_id + "ok"),
                              headers=_headers(server))  # fmt: skip
    assert fine.status_code == 201


def test_an_outage_is_503_without_the_database_url(server: Server, tmp_path: Path) -> None:
    doc = local_document(tmp_path, seconds=3, gpus=1)
    server.client.app.state.greenml.store.close()  # type: ignore[attr-defined]
    for method, path in (("POST", "/api/v1/runs"), ("GET", "/api/v1/runs"),
                         ("GET", "/api/v1/projects/A/aggregates"), ("GET", "/runs")):  # fmt: skip
        answer = server.client.request(method, path, json=doc, headers=_headers(server, "A-admin"))
        assert answer.status_code == 503, (path, answer.text)
        assert not _names_the_database(server, answer.text), (path, answer.text)


NUMBERS: list[tuple[str, tuple[Any, ...], str]] = [
    ("NaN energy", ("record", "energy", "total_j"), "NaN"),
    ("Infinity energy", ("record", "energy", "total_j"), "Infinity"),
    ("-Infinity carbon", ("record", "carbon", "kg"), "-Infinity"),
    ("1e308 energy", ("record", "energy", "total_j"), "1e308"),
    ("1e400 energy", ("record", "energy", "total_j"), "1e400"),
    ("negative energy", ("record", "energy", "total_j"), "-5.0"),
    ("negative device energy", ("record", "energy", "components", "gpu", "energy_j"), "-1"),
    ("negative window energy", ("windows", 0, "energy_j"), "-1"),
    ("1e308 cost", ("record", "cost", "usd"), "1e308"),
    ("year 9999", ("record", "started_at"), '"9999-01-01T00:00:00+00:00"'),
    ("year 1", ("record", "ended_at"), '"0001-01-01T00:00:00+00:00"'),
    ("window year 3000", ("windows", 0, "started_at"), "32503680000"),
    ("sample time 1e15", ("samples", 0, "t", 0), "1e15"),
    ("sample power 1e308", ("samples", 0, "power_w", 0), "1e308"),
    ("negative duration", ("record", "duration_s"), "-60"),
]


def _raw(doc: dict[str, Any], path: tuple[Any, ...], literal: str, run_id: str) -> bytes:
    marker = "__literal__"
    doc = copy.deepcopy(doc)
    doc["record"]["cost"] = {"usd": 1.0, "uncertainty_rel": 0.1, "basis": "test"}
    mutated = _mutate(doc, path, marker, run_id)
    return json.dumps(mutated).replace(f'"{marker}"', literal).encode()


@pytest.mark.parametrize(("why", "path", "literal"), NUMBERS, ids=[n[0] for n in NUMBERS])
def test_nan_infinity_1e308_negative_energy_and_absurd_years_are_refused(
    server: Server, tmp_path: Path, why: str, path: tuple[Any, ...], literal: str
) -> None:
    doc = local_document(tmp_path, seconds=3, gpus=1)
    assert server.client.post("/api/v1/runs", json=doc, headers=_headers(server)).status_code == 201
    run_id = "num" + str(abs(hash(why)) % 10**8)
    answer = server.client.post("/api/v1/runs", content=_raw(doc, path, literal, run_id),
                                headers={**_headers(server), "Content-Type": JSON})  # fmt: skip
    assert answer.status_code == 422, (why, answer.text)
    assert set(answer.json()) == {"error"}
    reader = _headers(server, "A-read")
    assert server.client.get(f"/api/v1/runs/{run_id}", headers=reader).status_code == 404
    totals = server.client.get("/api/v1/projects/A/aggregates", headers=reader)
    assert totals.status_code == 200
    report = server.client.get(
        f"/api/v1/projects/A/reports/statement?run={doc['record']['id']}&format=json",
        headers=reader,
    )
    assert report.status_code == 200


@pytest.mark.parametrize("depth", [100_000, 5_000])
def test_a_100000_deep_json_body_is_a_json_4xx_not_a_plain_text_500(
    server: Server, depth: int
) -> None:
    for body in (b"[" * depth + b"]" * depth, b'{"a":' * depth + b"1" + b"}" * depth):
        answer = server.client.post("/api/v1/runs", content=body, headers=_headers(server))
        assert answer.status_code in (400, 422), answer.text[:200]
        assert "nested too deeply" in answer.json()["error"]


NUMERIC_PATHS: list[tuple[Any, ...]] = [
    ("record", "energy", "total_j"), ("record", "energy", "uncertainty_rel"),
    ("record", "energy", "components", "gpu", "energy_j"), ("record", "carbon", "kg"),
    ("record", "duration_s"), ("record", "started_at"), ("record", "ended_at"),
    ("windows", 0, "energy_j"), ("windows", 0, "duration_s"), ("windows", 0, "started_at"),
    ("samples", 0, "t", 1), ("samples", 0, "power_w", 0), ("record", "carbon", "uncertainty_rel"),
]  # fmt: skip


@pytest.fixture(scope="module")
def one_project(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from fastapi.testclient import TestClient

    from greenml.server.app import create_app
    from greenml.store import access, open_store

    tmp = tmp_path_factory.mktemp("values")
    url = f"sqlite:///{tmp / 's.db'}"
    with open_store(url) as store:
        token = access.create_token(store, "p", "write")
    doc = local_document(tmp, seconds=4, gpus=1)
    with TestClient(create_app(url, max_body_bytes=500_000)) as client:
        yield client, {"Authorization": f"Bearer {token}", "Content-Type": JSON}, doc


def test_no_upload_body_breaks_the_reports_of_its_project(one_project: Any) -> None:
    """Property: whatever numbers an upload holds, it is stored or refused with 422, and
    every report of the project still answers with finite figures."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    client, headers, doc = one_project
    literals = (
        st.floats(allow_nan=True, allow_infinity=True).map(repr).map(
            lambda r: {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}.get(r, r))
        | st.integers(-(10**40), 10**40).map(str)
        | st.sampled_from(["1e308", "-1e308", "1e400", "253402300800", "-62135596800", "0"])
    )  # fmt: skip
    seen = {"stored": 0, "refused": 0}

    @settings(max_examples=120, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
    @given(path=st.sampled_from(NUMERIC_PATHS), literal=literals)
    def upload(path: tuple[Any, ...], literal: str) -> None:
        run_id = "h" + str(abs(hash((path, literal))) % 10**10)
        answer = client.post("/api/v1/runs", content=_raw(doc, path, literal, run_id),
                             headers=headers)  # fmt: skip
        assert answer.status_code in (200, 201, 422), (path, literal, answer.text)
        seen["stored" if answer.status_code != 422 else "refused"] += 1
        totals = client.get("/api/v1/projects/p/aggregates?period=month", headers=headers)
        assert totals.status_code == 200, totals.text
        for bucket in totals.json()["buckets"]:
            assert all(v is None or isinstance(v, str) or abs(v) < 1e300 for v in bucket.values())
        ids = [
            r["id"] for r in client.get("/api/v1/runs?limit=500", headers=headers).json()["runs"]
        ]
        query = "&".join(f"run={i}" for i in ids[:50])
        report = client.get(f"/api/v1/projects/p/reports/statement?{query}&format=json",
                            headers=headers)  # fmt: skip
        assert report.status_code == 200, (path, literal, report.text[:300])
        assert client.get("/runs?project=p", headers=headers).status_code == 200

    upload()
    assert seen["refused"] > 0 and seen["stored"] > 0

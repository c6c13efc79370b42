"""A job read from a team server: its JSON back into a summary, and answers that are not one."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from greenml.errors import ServerReadError
from greenml.jobs.remote import server_job, server_jobs
from greenml.jobs.summary import JobSummary, summarize_job
from greenml.run.server_settings import ServerSettings
from greenml.store import open_store
from greenml.store.jobs import job_runs
from greenml.store.repository import Store
from tests.jobs.builders import node_run

SERVER = ServerSettings("http://team.invalid", "gml_test")


@pytest.fixture(scope="module")
def jobs_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    with open_store(f"sqlite:///{tmp_path_factory.mktemp('remote') / 'jobs.db'}") as store:
        yield store


_NODE = st.tuples(st.integers(0, 5), st.floats(0.0, 1e7), st.sampled_from([None, 0.1, 2.5]))


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(nodes=st.lists(_NODE, min_size=1, max_size=5), expected=st.integers(1, 6))
def test_a_job_survives_its_json(
    jobs_store: Store, nodes: list[tuple[int, float, float | None]], expected: int
) -> None:
    """Conflicts, missing nodes, partial carbon: the summary read back is the one sent."""
    job_id = f"j-{uuid.uuid4().hex[:8]}"
    for rank, joules, kg in nodes:
        job = {"job_id": job_id, "node": f"n{rank}", "node_rank": rank, "expected_nodes": expected}
        node_run(jobs_store, job, gpu_j=[joules], carbon_kg=kg)
    sent = summarize_job(job_id, job_runs(jobs_store, job_id))
    back = JobSummary.from_dict(sent.to_dict())
    assert back == sent and back.to_listing() == sent.to_listing()


def _answer(monkeypatch: pytest.MonkeyPatch, status: int, body: Any) -> list[str]:
    asked: list[str] = []

    def get(url: str, **kw: Any) -> httpx.Response:
        asked.append(str(httpx.URL(url, params=kw.get("params"))))
        assert kw["headers"]["Authorization"] == "Bearer gml_test"
        return httpx.Response(status, json=body, request=httpx.Request("GET", url))

    monkeypatch.setattr(httpx, "get", get)
    return asked


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=8,
)  # fmt: skip


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(body=_JSON, drop=st.sampled_from(["", "nodes", "energy", "job_id"]))
def test_an_answer_that_is_not_a_job_is_one_line(
    monkeypatch: pytest.MonkeyPatch, body: Any, drop: str
) -> None:
    if drop:  # a real job's JSON with a key missing or a node of another shape
        job = {"job_id": "x", "job_name": None, "sources": ["option"], "nodes": [body],
               "expected_nodes": None, "missing_nodes": None, "missing_count": None,
               "energy": {}, "carbon": {}, "cost": {}, "span": {}, "conflicts": [],
               "elastic": None, "problems": [], "second_sources": []}  # fmt: skip
        job.pop(drop)
        body = job
    _answer(monkeypatch, 200, body)
    with pytest.raises(ServerReadError) as err:
        server_job(SERVER, "x")
    assert "\n" not in str(err.value) and SERVER.url in str(err.value)


REFUSALS = [(401, "401: unknown token"), (403, "403"), (404, "404: no run belongs"),
            (503, "503")]  # fmt: skip


@pytest.mark.parametrize(("status", "said"), REFUSALS)
def test_refusals_are_one_line_with_the_servers_reason(
    monkeypatch: pytest.MonkeyPatch, status: int, said: str
) -> None:
    errors = {401: "unknown token", 404: "no run belongs to job 'a/b'"}
    asked = _answer(monkeypatch, status, {"error": errors.get(status, "no")})
    with pytest.raises(ServerReadError, match=said):
        server_job(SERVER, "a/b")
    assert asked == ["http://team.invalid/api/v1/jobs/a%2Fb"]  # one path segment, quoted
    with pytest.raises(ServerReadError, match=said):
        server_jobs(SERVER, 5)


def test_no_token_is_said_before_asking(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _answer(monkeypatch, 200, {"jobs": []})
    with pytest.raises(ServerReadError, match=r"no token for http://team\.invalid"):
        server_jobs(ServerSettings(SERVER.url, None), 5)
    assert asked == []
    assert server_jobs(SERVER, 5) == [] and asked == ["http://team.invalid/api/v1/jobs?limit=5"]


def test_db_forces_the_store_and_db_with_server_is_refused(
    store: Store, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from greenml.cli import main

    node_run(store, {"job_id": "local-7", "node": "n0", "node_rank": 0}, gpu_j=[42.0])
    monkeypatch.setenv("GREENML_SERVER", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("GREENML_TOKEN", "gml_test")
    assert main(["jobs", "show", "local-7", "--json", "--db", store.url, "--no-sacct"]) == 0
    assert '"total_j": 42.0' in capsys.readouterr().out
    assert main(["jobs", "list", "--db", store.url, "--server", "http://127.0.0.1:9"]) == 2
    assert "--db and --server" in capsys.readouterr().err
    assert main(["jobs", "list"]) == 7  # the server, from GREENML_SERVER, does not answer
    err = capsys.readouterr().err
    assert "http://127.0.0.1:9 unreachable" in err and len(err.strip().splitlines()) == 1

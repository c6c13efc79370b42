"""Any upload body gets a one-line 4xx or is stored whole: never a 5xx, never half a run."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.server.helpers import local_document

pytest.importorskip("fastapi")

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12,
)  # fmt: skip
PATHS = [("format",), ("record",), ("record", "id"), ("record", "status"), ("record", "energy"),
         ("record", "started_at"), ("record", "tags"), ("record", "duration_s"), ("windows",),
         ("samples",), ("user",), ("ledger_entry",)]  # fmt: skip


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from fastapi.testclient import TestClient

    from greenml.server.app import create_app
    from greenml.store import access, open_store

    tmp = tmp_path_factory.mktemp("fuzz")
    url = f"sqlite:///{tmp / 's.db'}"
    with open_store(url) as store:
        token = access.create_token(store, "p", "write")
    doc = local_document(tmp, seconds=5, gpus=1)
    with TestClient(create_app(url, max_body_bytes=200_000)) as client:
        yield client, {"Authorization": f"Bearer {token}"}, doc


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(PATHS), value=JSON, sample_index=st.integers(0, 3),
       raw=st.binary(max_size=40))  # fmt: skip
def test_mutated_uploads(setup: Any, path: tuple[str, ...], value: Any, sample_index: int,
                         raw: bytes) -> None:  # fmt: skip
    client, headers, doc = setup
    mutated = copy.deepcopy(doc)
    run_id = "fuzz" + str(abs(hash((path, repr(value)))) % 10**8)
    mutated["record"]["id"] = run_id
    target = mutated
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    stored = False
    for body in (json.dumps(mutated).encode(), raw):
        response = client.post("/api/v1/runs", content=body,
                               headers={**headers, "Content-Type": "application/json"})  # fmt: skip
        assert response.status_code in (200, 201, 400, 409, 413, 422), response.text
        got = client.get(f"/api/v1/runs/{run_id}?points=0", headers=headers)
        if response.status_code >= 400:
            error = response.json()["error"]
            assert error and "\n" not in error
            if path != ("record", "id") and not stored:
                assert got.status_code == 404  # nothing half-written
        else:
            stored = True
            assert got.status_code == 200  # what was stored reads back

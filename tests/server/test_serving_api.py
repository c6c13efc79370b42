"""``/api/v1/serving``: proxies' per-minute figures stored once, validated whole, per project."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.server.conftest import Server

NOW_MINUTE = float(int(time.time() // 60 * 60))


def _minute(offset_min: int = 0, **over: Any) -> dict[str, Any]:
    row = {"minute": NOW_MINUTE - 60 * offset_min, "model": "llama", "tenant": "t1",
           "requests": 4, "cancelled": 1, "errors": 0, "prompt_tokens": 400,
           "completion_tokens": 100, "energy_j": 50.0, "uncertainty_j": 5.0, "prefill_j": 20.0,
           "decode_j": 30.0, "idle_j": 0.0, "co2eq_g": 0.5}  # fmt: skip
    row.update(over)
    return row


def _batch(batch: str = "b1", rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"source": "node-1:8790", "batch": batch, "method": "estimated",
            "scope": "CPU of the engine", "minutes": rows if rows is not None else [
                _minute(0), _minute(1, tenant="t2", energy_j=10.0, prefill_j=4.0, decode_j=6.0),
                _minute(0, model="", tenant="", requests=0, cancelled=0, prompt_tokens=0,
                        completion_tokens=0, energy_j=0.0, uncertainty_j=0.0, prefill_j=0.0,
                        decode_j=0.0, idle_j=40.0, co2eq_g=0.2)]}  # fmt: skip


def _auth(server: Server, key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.tokens[key]}"}


def _post(server: Server, body: Any, key: str = "A-write", raw: bytes | None = None) -> Any:
    content = raw if raw is not None else json.dumps(body).encode()
    headers = {**_auth(server, key), "Content-Type": "application/json"}
    return server.client.post("/api/v1/serving", content=content, headers=headers)  # type: ignore[attr-defined]


def test_a_batch_is_stored_once_and_read_back_with_per_token_figures(server: Server) -> None:
    first = _post(server, _batch())
    assert first.status_code == 201, first.text
    again = _post(server, _batch())  # a retry after a lost answer
    assert again.status_code == 200 and again.json()["created"] is False
    doc = server.client.get("/api/v1/projects/A/serving?bucket=minute",  # type: ignore[attr-defined]
                            headers=_auth(server, "A-read")).json()  # fmt: skip
    t = doc["totals"]
    assert (t["requests"], t["cancelled"], t["prompt_tokens"], t["completion_tokens"]) == (
        8,
        2,
        800,
        200,
    )
    assert t["energy_j"] == pytest.approx(60.0) and t["idle_j"] == pytest.approx(40.0)
    assert t["metered_j"] == pytest.approx(100.0) and t["idle_share"] == pytest.approx(0.4)
    assert t["j_per_prompt_token"] == pytest.approx(24.0 / 800)
    assert t["j_per_output_token"] == pytest.approx(36.0 / 200)
    assert t["co2eq_g"] == pytest.approx(1.2)
    assert [s["start"] for s in doc["series"]] == [NOW_MINUTE - 60, NOW_MINUTE]
    assert [x["name"] for x in doc["tenants"]] == ["t1", "t2"]  # most energy first, no idle row
    assert doc["methods"] == ["estimated"]


def test_serving_figures_of_one_project_are_not_anyone_elses(server: Server) -> None:
    assert _post(server, _batch()).status_code == 201
    other = server.client.get("/api/v1/projects/A/serving",  # type: ignore[attr-defined]
                              headers=_auth(server, "B-read"))  # fmt: skip
    assert other.status_code == 403
    own = server.client.get("/api/v1/projects/B/serving",  # type: ignore[attr-defined]
                            headers=_auth(server, "B-read")).json()  # fmt: skip
    assert own["totals"]["requests"] == 0 and own["series"] == []


def test_a_read_token_cannot_send_serving_figures(server: Server) -> None:
    assert _post(server, _batch(), key="A-read").status_code == 403


@pytest.mark.parametrize(("change", "where"), [
    ({"energy_j": -1.0}, "energy_j"),
    ({"energy_j": 1e308}, "energy_j"),
    ({"minute": NOW_MINUTE + 30}, "minute"),
    ({"minute": NOW_MINUTE + 3 * 86400}, "minute"),
    ({"minute": 60.0}, "minute"),
    ({"tenant": "x" * 129}, "tenant"),
    ({"model": "bad\x00name"}, "model"),
    ({"requests": -2}, "requests"),
    ({"surprise": 1}, "surprise"),
])  # fmt: skip
def test_a_bad_minute_row_is_refused_whole_with_422(server: Server, change: dict[str, Any],
                                                   where: str) -> None:  # fmt: skip
    rows = [_minute(1), _minute(0, **change)]
    response = _post(server, _batch(rows=rows))
    assert response.status_code == 422 and where in response.json()["error"]
    stored = server.client.get("/api/v1/projects/A/serving",  # type: ignore[attr-defined]
                               headers=_auth(server, "A-read")).json()  # fmt: skip
    assert stored["totals"]["requests"] == 0  # nothing of the batch was stored


@pytest.mark.parametrize("raw", [b'{"source": "a", "minutes": [NaN]}', b"[" * 100_000, b"\xff"])
def test_nan_deep_or_broken_json_is_a_client_error(server: Server, raw: bytes) -> None:
    response = _post(server, None, raw=raw)
    assert 400 <= response.status_code < 500 and "error" in response.json()


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)  # fmt: skip
FIELDS = [*_minute().keys()]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(field=st.sampled_from(FIELDS), value=JSONISH)
def test_any_value_in_any_field_is_stored_or_refused_never_a_server_error(
    server: Server, field: str, value: Any
) -> None:
    row = _minute(0, **{field: value})
    body = json.dumps(_batch(batch=f"h{abs(hash((field, repr(value)))) % 10**12}", rows=[row]))
    response = _post(server, None, raw=body.encode())
    assert response.status_code in (200, 201, 400, 422), response.text

"""One team-server client: uploads and reads say the same reason for the same answer."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from greenml.client import (
    AUTH_REFUSED,
    BAD_DATA,
    NOT_FOUND,
    SERVER_DOWN,
    TIMEOUT_S,
    TeamClient,
    reason_for,
)
from greenml.errors import ServerReadError, TeamServerError, UploadError
from greenml.run.server_settings import ServerSettings

SERVER = ServerSettings("http://team.invalid", "gml_test")


def _answer(monkeypatch: pytest.MonkeyPatch, status: int, body: Any) -> list[dict[str, Any]]:
    """Every request the client makes is answered ``status`` with ``body``; what it sent is kept."""
    sent: list[dict[str, Any]] = []

    def answer(url: str, **kw: Any) -> httpx.Response:
        sent.append({"url": url, **kw})
        return httpx.Response(status, json=body, request=httpx.Request("GET", url))

    monkeypatch.setattr(httpx, "get", answer)
    monkeypatch.setattr(httpx, "post", answer)
    return sent


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(status=st.integers(300, 599), said=st.text(max_size=40))
def test_an_upload_and_a_read_give_one_reason_for_one_answer(
    monkeypatch: pytest.MonkeyPatch, status: int, said: str
) -> None:
    sent = _answer(monkeypatch, status, {"error": said})
    with pytest.raises(ServerReadError) as read:
        TeamClient(SERVER).get_json("/api/v1/runs")
    with pytest.raises(UploadError) as upload:
        TeamClient(SERVER, UploadError).post_json("/api/v1/runs", b"{}")
    assert read.value.reason == upload.value.reason == reason_for(status)
    assert upload.value.retry is (reason_for(status) == SERVER_DOWN)
    for err in (read.value, upload.value):
        assert "\n" not in str(err) and f"answered {status}" in str(err)
    for request in sent:  # auth and timeouts in one place
        assert request["headers"]["Authorization"] == "Bearer gml_test"
        assert request["timeout"].read == TIMEOUT_S


@pytest.mark.parametrize(
    ("status", "reason"),
    [(401, AUTH_REFUSED), (403, AUTH_REFUSED), (404, NOT_FOUND), (400, BAD_DATA),
     (413, BAD_DATA), (422, BAD_DATA), (429, SERVER_DOWN), (500, SERVER_DOWN),
     (503, SERVER_DOWN), (None, SERVER_DOWN)],
)  # fmt: skip
def test_each_failure_has_one_of_four_reasons(status: int | None, reason: str) -> None:
    assert reason_for(status) == reason


def test_a_server_that_is_down_is_server_down_for_both(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(url: str, **kw: Any) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    monkeypatch.setattr(httpx, "get", refuse)
    monkeypatch.setattr(httpx, "post", refuse)
    for client in (TeamClient(SERVER), TeamClient(SERVER, UploadError)):
        with pytest.raises(TeamServerError, match="unreachable: ConnectError") as err:
            client.get_json("/api/v1/jobs") if client.reads else (
                client.post_json("/api/v1/runs", b"{}"))  # fmt: skip
        assert err.value.reason == SERVER_DOWN


def test_no_token_is_auth_refused_before_asking(monkeypatch: pytest.MonkeyPatch) -> None:
    sent = _answer(monkeypatch, 200, {})
    with pytest.raises(UploadError) as err:
        TeamClient(ServerSettings(SERVER.url, None), UploadError).post_json("/api/v1/runs", b"{}")
    assert err.value.reason == AUTH_REFUSED and err.value.retry is False and sent == []


def test_an_answer_that_is_not_an_object_is_bad_data(monkeypatch: pytest.MonkeyPatch) -> None:
    _answer(monkeypatch, 200, [1, 2])
    with pytest.raises(ServerReadError, match="not a JSON object") as err:
        TeamClient(SERVER).get_json("/api/v1/runs")
    assert err.value.reason == BAD_DATA

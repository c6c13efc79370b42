from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from greenml.accounting.live import HttpSettings, IntensityApiError
from greenml.accounting.live.http import ApiClient, _retry_after_s
from greenml.errors import GreenmlError
from tests.accounting.live.conftest import FakeApi, Reply, Sleeps

OK = {"ok": True}


def client(api: FakeApi, settings: HttpSettings, **kwargs: object) -> ApiClient:
    return ApiClient("Test API", api.url + "/v1", settings=settings, **kwargs)  # type: ignore[arg-type]


def test_retries_a_500_then_succeeds(api: FakeApi, fast: HttpSettings, sleeps: Sleeps) -> None:
    api.route("/v1/data", Reply({"message": "boom"}, 500), OK)
    assert client(api, fast).get_json("/data") == OK
    assert len(api.hits("/v1/data")) == 2
    assert sleeps == [0.001]  # one backoff at the configured base


def test_backoff_doubles_and_gives_up_after_max_attempts(
    api: FakeApi, fast: HttpSettings, sleeps: Sleeps
) -> None:
    api.route("/v1/data", Reply({"message": "down for maintenance"}, 503))
    with pytest.raises(IntensityApiError) as info:
        client(api, fast).get_json("/data")
    assert len(api.hits("/v1/data")) == 3
    assert sleeps == [0.001, 0.002]
    message = str(info.value)
    assert message == (
        "Test API: 503 Service Unavailable after 3 attempts on /v1/data — down for maintenance"
    )
    assert info.value.status == 503
    assert isinstance(info.value, GreenmlError)


def test_retry_after_is_honoured(api: FakeApi, fast: HttpSettings, sleeps: Sleeps) -> None:
    api.route("/v1/data", Reply({}, 429, {"Retry-After": "1"}), OK)
    assert client(api, fast).get_json("/data") == OK
    assert sleeps == [1.0]  # the server's delay, not the 0.001 s backoff


def test_retry_after_really_waits(api: FakeApi) -> None:
    settings = HttpSettings(backoff_base_s=0.0)
    api.route("/v1/data", Reply({}, 503, {"Retry-After": "0.2"}), OK)
    started = time.monotonic()
    assert client(api, settings).get_json("/data") == OK
    assert time.monotonic() - started >= 0.19


def test_retry_after_as_an_http_date() -> None:
    from email.utils import formatdate

    assert _retry_after_s(formatdate(time.time() + 30, usegmt=True)) == pytest.approx(30, abs=2)
    assert _retry_after_s(formatdate(time.time() - 30, usegmt=True)) == 0.0
    assert _retry_after_s("soon") is None


def test_retry_after_longer_than_allowed_fails_at_once(
    api: FakeApi, fast: HttpSettings, sleeps: Sleeps
) -> None:
    api.route("/v1/data", Reply({}, 429, {"Retry-After": "3600"}))
    with pytest.raises(
        IntensityApiError, match=r"429 Too Many Requests \(server asks to retry after 3600 s\)"
    ):
        client(api, fast).get_json("/data")
    assert len(api.hits("/v1/data")) == 1
    assert sleeps == []


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_no_retry_on_other_client_errors(api: FakeApi, fast: HttpSettings, status: int) -> None:
    api.route("/v1/data", Reply({"message": "nope"}, status))
    with pytest.raises(IntensityApiError) as info:
        client(api, fast).get_json("/data")
    assert len(api.hits("/v1/data")) == 1
    assert info.value.status == status
    assert "attempts" not in str(info.value)


def test_hint_replaces_server_message_and_secrets_are_redacted(
    api: FakeApi, fast: HttpSettings
) -> None:
    api.route("/v1/data", Reply({"message": "bad token s3cr3t-t0ken"}, 400))
    c = client(api, fast, hints={401: "check GREENML_TEST_TOKEN"}, secrets=["s3cr3t-t0ken"])
    with pytest.raises(IntensityApiError) as info:
        c.get_json("/data", params={"zone": "DE"})
    assert str(info.value) == "Test API: 400 Bad Request on /v1/data — bad token ***"
    api.route("/v1/data", Reply({}, 401))
    with pytest.raises(IntensityApiError) as info:
        c.get_json("/data")
    assert str(info.value) == "Test API: 401 Unauthorized on /v1/data — check GREENML_TEST_TOKEN"


def test_timeout_is_one_clear_line(api: FakeApi) -> None:
    settings = HttpSettings(read_timeout_s=0.2, max_attempts=2, backoff_base_s=0.001)
    api.route("/v1/slow", Reply(OK, delay_s=1.0))
    started = time.monotonic()
    with pytest.raises(IntensityApiError) as info:
        client(api, settings).get_json("/slow")
    assert time.monotonic() - started < 1.5
    assert str(info.value) == (
        "Test API: timed out (read timeout 0.2 s) after 2 attempts on /v1/slow"
    )
    assert info.value.status is None
    assert len(api.hits("/v1/slow")) == 2


def test_connection_refused_is_one_clear_line(fast: HttpSettings, sleeps: Sleeps) -> None:
    port = free_port()  # nothing listens there
    c = ApiClient("Test API", f"http://127.0.0.1:{port}", settings=fast)
    with pytest.raises(IntensityApiError, match=r"^Test API: connection failed \(ConnectError"):
        c.get_json("/v1/data")
    assert len(sleeps) == 2  # connection errors are retried


def test_answer_that_is_not_json(api: FakeApi, fast: HttpSettings) -> None:
    api.route("/v1/data", Reply(b"<html>maintenance</html>"))
    with pytest.raises(IntensityApiError, match="answer is not JSON"):
        client(api, fast).get_json("/data")


def test_importing_the_sources_does_not_import_httpx() -> None:
    code = "import sys, greenml.accounting.live; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_redirects_are_not_followed(api: FakeApi, fast: HttpSettings) -> None:
    api.route("/v1/data", Reply({}, 301, {"Location": "https://elsewhere.example/v1/data?x=1"}))
    with pytest.raises(IntensityApiError) as info:
        client(api, fast).get_json("/data")
    assert str(info.value) == (
        "Test API: 301 redirect on /v1/data — moved to elsewhere.example/v1/data; check base_url"
    )
    assert len(api.requests) == 1


def test_sources_implement_the_intensity_source_protocol() -> None:
    from greenml.accounting.intensity import IntensitySource
    from greenml.accounting.live import (
        ElectricityMapsSource,
        UkCarbonIntensitySource,
        WattTimeSource,
    )

    sources: list[IntensitySource] = [  # checked by mypy
        ElectricityMapsSource("DE", token="t"),
        WattTimeSource("CAISO_NORTH", token="t"),
        UkCarbonIntensitySource(),
    ]
    assert all(callable(s.intensity) for s in sources)

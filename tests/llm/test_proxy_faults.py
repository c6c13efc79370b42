"""Answers a real engine does not give: a measured path answered with something not JSON."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest

from tests.llm.conftest import start_proxy
from tests.llm.engine import free_port


async def _not_json_engine(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/plain"), (b"x-engine", b"plain")],
        }
    )
    await send({"type": "http.response.body", "body": b"plain answer, not JSON {"})


def test_non_json_answer_passes_through_untouched(tmp_path: Any) -> None:
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(_not_json_engine, port=port, log_level="warning",
                                           lifespan="off"))  # fmt: skip
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    p = start_proxy(f"http://127.0.0.1:{port}", f"sqlite:///{tmp_path / 'g.db'}", sample_hz=20.0)
    try:
        r = httpx.post(p.url + "/v1/completions", json={"model": "m", "prompt": "w1 w2"})
        assert r.content == b"plain answer, not JSON {"
        assert r.headers["x-engine"] == "plain"
        assert r.headers["x-greenml-energy-j"] == "unavailable"
        p.wait_settled()
        (row,) = p.app.settled.values()
        assert row["status"] == "unavailable"
    finally:
        p.stop()
        server.should_exit = True
        thread.join(timeout=10)


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/embeddings"])
def test_invalid_request_json_goes_to_the_engine_as_is(tmp_path: Any, path: str) -> None:
    import uvicorn

    seen: list[bytes] = []

    async def echo(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            m = await receive()
            body += m.get("body", b"")
            if not m.get("more_body"):
                break
        seen.append(body)
        await send(
            {
                "type": "http.response.start",
                "status": 400,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": b'{"error": "bad json"}'})

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(echo, port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    p = start_proxy(f"http://127.0.0.1:{port}", f"sqlite:///{tmp_path / 'g.db'}", sample_hz=20.0)
    try:
        r = httpx.post(p.url + path, content=b"{not json")
        assert r.status_code == 400 and r.json() == {"error": "bad json"}
        assert seen == [b"{not json"]
    finally:
        p.stop()
        server.should_exit = True
        thread.join(timeout=10)

"""A body over the server's limit is refused with 413 before it is read whole, and the
server answers other requests meanwhile (a real ``greenml server`` process)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server.live import LiveServer, free_port

pytest.importorskip("uvicorn")

CHUNK = b"[" + b"1.25," * 13_000  # about 64 KB of a JSON array


@pytest.fixture
def small_limit(tmp_path: Path) -> Iterator[tuple[LiveServer, str]]:
    from greenml.store import access, open_store

    url = f"sqlite:///{tmp_path / 's.db'}"
    with open_store(url) as store:
        token = access.create_token(store, "p", "write")
    live = LiveServer(url, free_port(), tmp_path / "server.log", "--max-body-mb", "1")
    live.start()
    try:
        yield live, token
    finally:
        live.stop()


def _send_slowly(live: LiveServer, token: str, chunked: bool) -> tuple[bytes, int]:
    """Send up to 40 MB in 64 KB pieces; (the answer's first bytes, bytes sent before it)."""
    head = (f"POST /api/v1/runs HTTP/1.1\r\nHost: 127.0.0.1:{live.port}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n")  # fmt: skip
    head += "Transfer-Encoding: chunked\r\n\r\n" if chunked else "Content-Length: 40000000\r\n\r\n"
    sent = 0
    with socket.create_connection(("127.0.0.1", live.port), timeout=10) as conn:
        conn.sendall(head.encode())
        conn.setblocking(False)
        while sent < 40_000_000:
            try:
                answer = conn.recv(200)
                if answer:
                    return answer, sent
            except BlockingIOError:
                pass
            piece = (b"%x\r\n" % len(CHUNK) + CHUNK + b"\r\n") if chunked else CHUNK
            try:
                conn.setblocking(True)
                conn.settimeout(5)
                conn.sendall(piece)
                conn.setblocking(False)
            except OSError:  # the server closed: read what it said
                conn.setblocking(True)
                return conn.recv(200), sent
            sent += len(CHUNK)
            time.sleep(0.005)
    return b"", sent


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_an_oversized_upload_is_refused_early_while_others_are_answered(
    small_limit: tuple[LiveServer, str], chunked: bool
) -> None:
    live, token = small_limit
    latencies: list[float] = []
    stop = threading.Event()

    def poll() -> None:
        with httpx.Client(base_url=live.url, timeout=30) as client:
            while not stop.is_set():
                began = time.monotonic()
                answer = client.get("/api/v1/whoami", headers={"Authorization": f"Bearer {token}"})
                assert answer.status_code == 200
                latencies.append(time.monotonic() - began)
                time.sleep(0.02)

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        answer, sent = _send_slowly(live, token, chunked)
    finally:
        stop.set()
        poller.join()
    assert answer.startswith(b"HTTP/1.1 413"), answer
    assert sent < 4_000_000, f"{sent} bytes were taken before the 413"  # the limit is 1 MB
    assert max(latencies, default=0.0) < 1.0, max(latencies)
    with httpx.Client(base_url=live.url, timeout=30) as client:  # and it still answers
        began = time.monotonic()
        assert client.get("/api/v1/whoami", headers={"Authorization": f"Bearer {token}"}).is_success
        assert time.monotonic() - began < 1.0


def test_a_large_upload_does_not_stall_other_requests(tmp_path: Path) -> None:
    """A 76 MB upload is parsed off the event loop: others are answered meanwhile."""
    import json

    from greenml.store import access, open_store
    from tests.server.helpers import T0, local_document

    url = f"sqlite:///{tmp_path / 's.db'}"
    with open_store(url) as store:
        token = access.create_token(store, "p", "write")
    headers = {"Authorization": f"Bearer {token}"}
    doc = local_document(tmp_path, seconds=3, gpus=1)
    n = 170_000  # about 76 MB, as in the report
    doc["samples"] = [
        {"device": f"gpu{d}", "component": "gpu", "t": [T0 + k * 0.1 for k in range(n)],
         "power_w": [150.5 + k % 97 for k in range(n)], "utilization": [0.875] * n,
         "memory_used_bytes": [12345678901.0] * n, "sm_clock_mhz": [1410.0] * n}
        for d in range(8)
    ]  # fmt: skip
    body = json.dumps(doc).encode()
    live = LiveServer(url, free_port(), tmp_path / "server.log").start()
    latencies: list[float] = []
    stop = threading.Event()

    def poll() -> None:
        with httpx.Client(base_url=live.url, timeout=60) as client:
            while not stop.is_set():
                began = time.monotonic()
                assert client.get("/api/v1/whoami", headers=headers).status_code == 200
                latencies.append(time.monotonic() - began)
                time.sleep(0.02)

    poller = threading.Thread(target=poll)
    try:
        poller.start()
        sent = httpx.post(f"{live.url}/api/v1/runs", content=body, timeout=300,
                          headers={**headers, "Content-Type": "application/json"})  # fmt: skip
        time.sleep(0.2)
    finally:
        stop.set()
        poller.join()
        live.stop()
    assert sent.status_code == 201, sent.text
    assert len(latencies) > 5 and max(latencies) < 1.0, (len(body), max(latencies))

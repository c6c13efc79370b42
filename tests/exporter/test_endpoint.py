"""The scrape endpoint under misuse: unknown paths, hang-ups, idle and concurrent clients."""

from __future__ import annotations

import contextlib
import http.client
import logging
import selectors
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from greenml.accounting.intensity import ConstantSource
from greenml.errors import ConfigError
from greenml.exporter import Exporter
from greenml.exporter.endpoint import SharedRender
from greenml.measure.meter import Meter
from tests.exporter.test_exporter import _use_fake_meter

WORKERS = 2


@pytest.fixture
def endpoint(fake_meter: Meter) -> Iterator[tuple[Exporter, int]]:
    exp = Exporter(fake_meter, intensity=ConstantSource.user(300.0), job="t", host="h")
    exp.step()
    port = exp.serve("127.0.0.1", 0, workers=WORKERS, timeout_s=0.5)
    yield exp, port
    exp.close()


def get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_metrics_index_and_404(endpoint: tuple[Exporter, int]) -> None:
    _, port = endpoint
    status, body = get(port, "/metrics")
    names = {f.name for f in text_string_to_metric_families(body.decode())}
    assert status == 200 and "greenml_device_power_watts" in names
    status, body = get(port, "/")
    assert status == 200 and b'href="/metrics"' in body
    for path in ("/nope", "/metrics/extra", "/favicon.ico", "/index.html"):
        status, body = get(port, path)
        assert (status, body) == (404, b"not found: see /metrics\n"), path
    assert get(port, "/metrics?x=1")[0] == 200  # a query string is still /metrics


def test_openmetrics_and_gzip_are_negotiated(endpoint: tuple[Exporter, int]) -> None:
    import gzip

    _, port = endpoint
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request(
        "GET",
        "/metrics",
        headers={
            "Accept": "application/openmetrics-text; version=1.0.0",
            "Accept-Encoding": "gzip",
        },
    )
    response = conn.getresponse()
    body = gzip.decompress(response.read())
    conn.close()
    assert response.getheader("Content-Type", "").startswith("application/openmetrics-text")
    assert body.endswith(b"# EOF\n")


def _hang_ups(port: int) -> None:
    """Clients that go away: before a request, mid-request, and after sending one (reset)."""
    with socket.create_connection(("127.0.0.1", port)):
        pass
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /metr")
    for _ in range(5):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # a reset: the answer has nowhere to go


def test_client_hang_ups_print_nothing(
    endpoint: tuple[Exporter, int],
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    _, port = endpoint
    caplog.set_level(logging.DEBUG, logger="greenml.exporter")
    _hang_ups(port)
    for _ in range(WORKERS * 2):  # after the hang-ups in the pool's queue: they were handled
        assert get(port, "/metrics")[0] == 200
    sys.stderr.flush()
    assert capfd.readouterr().err == ""
    assert [r for r in caplog.records if r.name == "greenml.exporter"] == []


def test_idle_connections_hold_no_thread_and_time_out(endpoint: tuple[Exporter, int]) -> None:
    _, port = endpoint
    assert get(port, "/metrics")[0] == 200  # the pool's threads exist from here on
    threads = threading.active_count()
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(200)]
    try:
        # A scrape is answered while 200 connections say nothing (not queued behind them).
        assert get(port, "/metrics")[0] == 200
        assert threading.active_count() - threads <= WORKERS
        assert _closed_by_server(idle, within_s=30) == len(idle)  # timeout_s=0.5 each
    finally:
        for sock in idle:
            sock.close()
    assert threading.active_count() - threads <= WORKERS


def _closed_by_server(socks: list[socket.socket], within_s: float) -> int:
    """How many of ``socks`` the server closed (EOF or reset) within ``within_s``."""
    selector = selectors.DefaultSelector()
    for each in socks:
        selector.register(each, selectors.EVENT_READ)
    closed = 0
    deadline = time.monotonic() + within_s
    while closed < len(socks) and time.monotonic() < deadline:
        for key, _ in selector.select(timeout=0.5):
            sock: Any = key.fileobj
            try:
                data = sock.recv(1)
            except ConnectionError:
                data = b""
            assert data == b""  # nothing but the close
            selector.unregister(sock)
            closed += 1
    selector.close()
    return closed


def test_many_waiting_connections_close_the_oldest(fake_meter: Meter) -> None:
    from greenml.exporter.endpoint import ScrapeHandler, ScrapeServer

    exp = Exporter(fake_meter)
    handler = ScrapeHandler.factory(exp.registry)
    server = ScrapeServer(("127.0.0.1", 0), handler, workers=1, timeout_s=60, max_waiting=5)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    port = server.server_address[1]
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(15)]
    try:
        assert get(port, "/metrics")[0] == 200  # accepted after the 15: they are all in
        assert _closed_by_server(idle[:10], within_s=10) == 10  # long before their timeout
    finally:
        for sock in idle:
            sock.close()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_concurrent_scrapes_all_succeed(endpoint: tuple[Exporter, int]) -> None:
    _, port = endpoint
    statuses: list[int] = []
    failures: list[BaseException] = []
    lock = threading.Lock()

    def scraper() -> None:
        for _ in range(10):
            try:
                status, body = get(port, "/metrics")
                assert b"greenml_device_power_watts" in body
            except BaseException as exc:  # reported below
                with lock:
                    failures.append(exc)
                continue
            with lock:
                statuses.append(status)

    scrapers = [threading.Thread(target=scraper) for _ in range(20)]
    for t in scrapers:
        t.start()
    for t in scrapers:
        t.join(timeout=60)
    assert failures == []
    assert statuses == [200] * 200


def test_shared_render_shares_and_recovers() -> None:
    shared = SharedRender()
    assert shared.get("text", lambda: b"one") == b"one"
    assert shared.get("text", lambda: b"two") == b"two"  # nothing cached after a render

    def broken() -> bytes:
        raise RuntimeError("collector failed")

    with pytest.raises(RuntimeError, match="collector failed"):
        shared.get("text", broken)
    assert shared.get("text", lambda: b"three") == b"three"  # not stuck on the failure

    started, release = threading.Event(), threading.Event()
    calls: list[int] = []

    def slow() -> bytes:
        calls.append(1)
        started.set()
        release.wait(10)
        return b"slow"

    results: list[bytes] = []
    owner = threading.Thread(target=lambda: results.append(shared.get("text", slow)))
    owner.start()
    started.wait(10)
    joiner = threading.Thread(target=lambda: results.append(shared.get("text", slow)))
    joiner.start()
    while shared.shared == 0 and joiner.is_alive():  # it waits for the owner's rendering ...
        joiner.join(timeout=0.01)
    assert shared.shared == 1
    release.set()
    owner.join(timeout=10)
    joiner.join(timeout=10)
    assert results == [b"slow", b"slow"] and calls == [1]  # ... and does not render again


@pytest.mark.parametrize("port", [99999, 65536, -1])
def test_serve_rejects_a_port_out_of_range(fake_meter: Meter, port: int) -> None:
    with Exporter(fake_meter) as exp, pytest.raises(ConfigError, match="port must be 0-65535"):
        exp.serve("127.0.0.1", port)


@pytest.mark.parametrize(
    ("port", "message"),
    [
        ("99999", "99999 is not in the range 1<=x<=65535"),
        ("0", "0 is not in the range"),
        ("-5", "-5 is not in the range"),
        ("abc", "'abc' is not a valid integer"),
    ],
)
def test_cli_bad_port_is_one_line_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], port: str, message: str
) -> None:
    from greenml.cli import main

    _use_fake_meter(monkeypatch)
    code = main(["exporter", "--port", port, "--ci", "300", "--duration", "0.1"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("greenml: error: ") and message in err


def test_shared_render_is_reused_briefly_until_invalidated() -> None:
    from tests.helpers import ManualClock

    clock = ManualClock(start=0.0)
    shared = SharedRender(max_age_s=0.1, clock=clock)
    outputs = iter([b"1", b"2", b"3", b"4"])
    assert shared.get("text", lambda: next(outputs)) == b"1"
    clock.advance(0.05)
    assert shared.get("text", lambda: next(outputs)) == b"1"  # within 0.1 s
    assert shared.get("openmetrics", lambda: next(outputs)) == b"2"  # per content type
    shared.invalidate()  # the Exporter ticked: new figures
    assert shared.get("text", lambda: next(outputs)) == b"3"
    clock.advance(0.1)
    assert shared.get("text", lambda: next(outputs)) == b"4"  # too old
    assert (shared.rendered, shared.shared) == (4, 1)


def test_a_tick_is_seen_by_the_next_scrape(endpoint: tuple[Exporter, int]) -> None:
    exp, port = endpoint
    first = get(port, "/metrics")[1]
    assert get(port, "/metrics")[1] == first  # reused: nothing changed
    exp.step()
    assert get(port, "/metrics")[1] != first  # energy grew since


def test_slowloris_clients_dribbling_requests_do_not_stall_a_scrape(fake_meter: Meter) -> None:
    """8 clients that send a request one byte at a time hold no worker: a scrape is answered
    at once, and each dribbler is closed once its whole request is later than ``timeout_s``."""
    exp = Exporter(fake_meter, intensity=ConstantSource.user(300.0), job="t", host="h")
    exp.step()
    port = exp.serve("127.0.0.1", 0, workers=8, timeout_s=5.0)
    slow = [socket.create_connection(("127.0.0.1", port)) for _ in range(8)]
    stop = threading.Event()

    def dribble() -> None:
        request = b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"a" * 1000
        for i in range(len(request)):
            for sock in slow:
                with contextlib.suppress(OSError):  # closed by the server: expected
                    sock.send(request[i : i + 1])
            if stop.wait(0.1):
                return

    dribbler = threading.Thread(target=dribble)
    dribbler.start()
    try:
        time.sleep(0.5)  # every slow client has begun its request
        for _ in range(3):
            began = time.monotonic()
            status, body = get(port, "/metrics")
            assert status == 200 and b"greenml" in body
            assert time.monotonic() - began < 1.0, time.monotonic() - began
        # each dribbler is closed when its request is not complete within timeout_s (5 s)
        assert _closed_by_server(slow, within_s=15) == len(slow)
    finally:
        stop.set()
        dribbler.join()
        for sock in slow:
            sock.close()
        exp.close()

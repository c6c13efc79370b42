"""Notice pollers against a local metadata server that starts answering with a notice."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from greenml.errors import ConfigError
from greenml.resilience.checkpointer import Checkpointer
from greenml.resilience.loop import resilient_steps
from greenml.resilience.notices import (
    AwsSpotNotices,
    GcpPreemptionNotices,
    NoticePoller,
    notice_source,
)
from greenml.resilience.session import Interrupts
from greenml.resilience.signals import EXIT_REQUEUE, InterruptGuard


class Metadata:
    """What the fake metadata service has seen and will answer."""

    def __init__(self, notice_after: int, rotate_token_after: int | None = None) -> None:
        self.notice_after = notice_after
        self.rotate_token_after = rotate_token_after
        self.token = "token-1"
        self.gets = 0
        self.puts = 0
        self.refused = 0


def _handler(meta: Metadata) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _answer(self, status: int, body: str = "", kind: str = "text/plain") -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_PUT(self) -> None:
            if self.path != "/latest/api/token" or not self.headers.get(
                "X-aws-ec2-metadata-token-ttl-seconds"
            ):
                self._answer(400)
                return
            meta.puts += 1
            self._answer(200, meta.token)

        def do_GET(self) -> None:
            if self.path == "/latest/meta-data/spot/instance-action":
                if self.headers.get("X-aws-ec2-metadata-token") != meta.token:
                    meta.refused += 1
                    self._answer(401)
                    return
                meta.gets += 1
                if meta.rotate_token_after and meta.gets == meta.rotate_token_after:
                    meta.token = "token-2"  # the session token expires
                if meta.gets <= meta.notice_after:
                    self._answer(404, "Not Found")
                    return
                at = datetime.now(timezone.utc) + timedelta(seconds=110)
                doc = {"action": "terminate", "time": at.strftime("%Y-%m-%dT%H:%M:%SZ")}
                self._answer(200, json.dumps(doc), "application/json")
            elif self.path == "/computeMetadata/v1/instance/preempted":
                if self.headers.get("Metadata-Flavor") != "Google":
                    self._answer(403)
                    return
                meta.gets += 1
                self._answer(200, "TRUE" if meta.gets > meta.notice_after else "FALSE")
            else:
                self._answer(404)

    return Handler


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[ThreadingHTTPServer] = []

    def start(meta: Metadata) -> str:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(meta))
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _wait(guard: InterruptGuard, seconds: float = 20.0) -> None:
    end = time.monotonic() + seconds
    while not guard.requested and time.monotonic() < end:
        time.sleep(0.01)


def test_aws_notice_after_some_404s_files_a_request_with_the_remaining_time(serve: Any) -> None:
    meta = Metadata(notice_after=3)
    guard = InterruptGuard(signals=())
    poller = NoticePoller(
        AwsSpotNotices(serve(meta)), lambda n: guard.request(n.reason, n.budget_s), interval_s=0.02
    ).start()
    try:
        _wait(guard)
    finally:
        poller.stop()
    interruption = guard.interruption
    assert interruption is not None and interruption.reason == "aws terminate notice"
    assert 100 <= interruption.budget_s <= 110  # the notice's own time, under the 120 s default
    assert meta.gets == 4 and poller.polls == 4  # it stops polling once the notice is in
    assert meta.puts == 1 and meta.refused == 0
    assert poller.notice is not None and poller.notice.at is not None


def test_aws_expired_token_is_fetched_again(serve: Any) -> None:
    meta = Metadata(notice_after=3, rotate_token_after=2)
    source = AwsSpotNotices(serve(meta))
    answers = [source.check() for _ in range(4)]
    source.close()
    assert answers[:3] == [None, None, None]
    assert answers[3] is not None and answers[3].action == "terminate"
    assert meta.refused == 1 and meta.puts == 2


def test_gcp_preempted_true_is_a_notice_with_the_gcp_budget(serve: Any) -> None:
    meta = Metadata(notice_after=2)
    source = GcpPreemptionNotices(serve(meta))
    answers = [source.check() for _ in range(3)]
    source.close()
    assert answers[:2] == [None, None]
    notice = answers[2]
    assert notice is not None and notice.reason == "gcp preempted notice"
    assert notice.budget_s == 30.0


def test_an_unreachable_metadata_service_is_warned_about_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    poller = NoticePoller(GcpPreemptionNotices(f"http://127.0.0.1:{port}"), lambda n: None)
    for _ in range(3):
        assert poller.poll_once() is None
    poller.stop()
    assert poller.failures == 3
    warnings = [r for r in caplog.records if "cannot read GCP termination notices" in r.message]
    assert len(warnings) == 1
    assert "will not be seen" in warnings[0].message


def test_a_notice_stops_the_training_loop_with_an_emergency_checkpoint(
    serve: Any, tmp_path: Path
) -> None:
    pytest.importorskip("torch")
    meta = Metadata(notice_after=2)
    progress = {"done": 0}
    ckpt = Checkpointer(tmp_path)
    steps = resilient_steps(
        10_000,
        ckpt,
        data_state=progress,
        interrupts=Interrupts(
            handle_signals=False, notices=AwsSpotNotices(serve(meta)), notice_interval_s=0.02
        ),
    )
    with pytest.raises(SystemExit) as stop:
        for _ in steps:
            progress["done"] += 1
            time.sleep(0.005)
    assert stop.value.code == EXIT_REQUEUE
    loaded = ckpt.load_latest()
    assert loaded is not None and loaded.info.reason == "emergency"
    assert loaded.info.step == progress["done"] == loaded.state["data_state"]["done"]
    assert 0 < progress["done"] < 10_000


def test_provider_names_and_the_environment_override(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="known: aws, gcp"):
        notice_source("azure")
    monkeypatch.setenv("GREENML_AWS_METADATA_URL", "http://127.0.0.1:9/")
    monkeypatch.delenv("GREENML_GCP_METADATA_URL", raising=False)
    assert notice_source("AWS").base_url == "http://127.0.0.1:9"
    assert GcpPreemptionNotices().base_url == "http://metadata.google.internal"
    assert AwsSpotNotices("http://10.0.0.1").base_url == "http://10.0.0.1"  # argument first

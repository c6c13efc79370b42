"""``greenml llm proxy --engine-cmd … --server URL``: the proxy starts the engine, measures it,
and the team server's serving page shows what the proxy measured — the same requests, tokens
and joules as the proxy's own store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import openai
import pytest

from greenml.store import access, open_store
from tests.exporter.recording_server import recording_server
from tests.llm.conftest import Engine
from tests.llm.engine import free_port, prompt
from tests.server.live import LiveServer

pytestmark = pytest.mark.timeout(900)
SRC = Path(__file__).resolve().parents[2] / "src"


def _wait(url: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"exited {proc.returncode}: {log.read_text()[-3000:]}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"{url} did not answer: {log.read_text()[-3000:]}")


def test_proxy_started_engine_and_serving_page_agree_with_the_proxy(
    engine: Engine, tmp_path: Path
) -> None:
    server_db = f"sqlite:///{tmp_path / 'server.db'}"
    with open_store(server_db) as store:
        write = access.create_token(store, "chat", "write")
        read = access.create_token(store, "chat", "read")
    server = LiveServer(server_db, free_port(), tmp_path / "server.log").start()
    engine_port, port = free_port(), free_port()
    exe = Path(sys.executable).parent / "transformers"
    engine_cmd = (f"{exe} serve --continuous-batching --host 127.0.0.1 --port {engine_port} "
                  f"{engine.model}")  # fmt: skip
    proxy_db = f"sqlite:///{tmp_path / 'proxy.db'}"
    env = {**os.environ, "GREENML_TOKEN": write, "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1",
           "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}  # fmt: skip
    log = tmp_path / "proxy.log"
    collector_cm = recording_server()
    collector = collector_cm.__enter__()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "greenml", "llm", "proxy", "--upstream",
             f"http://127.0.0.1:{engine_port}", "--port", str(port), "--engine-cmd", engine_cmd,
             "--db", proxy_db, "--server", server.url, "--server-every", "1",
             "--otlp-endpoint", f"{collector.url}/v1/metrics"],
            stdout=out, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(f"http://127.0.0.1:{engine_port}/health", proc, log)
        _wait(url + "/greenml/ledger", proc, log)
        assert "CPU and DRAM of the engine's process tree (pid" in log.read_text()
        assert f"per-minute figures to {server.url}" in log.read_text()

        def chat(i: int) -> int:
            client = openai.OpenAI(base_url=url + "/v1", api_key=f"sk-tenant-{i % 2}",
                                   timeout=600, max_retries=0)  # fmt: skip
            r = client.chat.completions.create(
                model=engine.model,
                max_tokens=4 + 4 * (i % 3),
                temperature=0,  # type: ignore[arg-type]
                messages=[{"role": "user", "content": prompt(6 + 5 * (i % 4), i)}],
            )
            assert r.usage is not None
            return r.usage.completion_tokens

        with ThreadPoolExecutor(8) as pool:
            outputs = list(pool.map(chat, range(12)))
        deadline = time.monotonic() + 120
        while True:
            ledger = httpx.get(url + "/greenml/ledger", timeout=10).json()
            if ledger["in_flight"] == 0 and ledger["unsettled_intervals"] == 0:
                break
            assert time.monotonic() < deadline, ledger
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)  # the proxy sends what is left, and stops its engine
        assert proc.wait(timeout=60) == 0, log.read_text()[-3000:]
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{engine_port}/health", timeout=2)

        local = json.loads(subprocess.run(
            [sys.executable, "-m", "greenml", "llm", "stats", "--db", proxy_db, "--json"],
            capture_output=True, text=True, env=env, timeout=120, check=True).stdout)  # fmt: skip
        head = {"Authorization": f"Bearer {read}"}
        remote = httpx.get(f"{server.url}/api/v1/projects/chat/serving?bucket=minute",
                           headers=head, timeout=30).json()  # fmt: skip
        t = remote["totals"]
        assert t["requests"] == local["requests"] == 12
        assert t["completion_tokens"] == local["completion_tokens"] == sum(outputs)
        assert t["prompt_tokens"] == local["prompt_tokens"] > 0
        assert t["energy_j"] == pytest.approx(local["attributed_j"], rel=1e-9)
        assert t["idle_j"] == pytest.approx(local["idle_j"], rel=1e-9, abs=1e-9)
        assert t["j_per_output_token"] == pytest.approx(local["j_per_output_token"], rel=1e-9)
        assert len(remote["tenants"]) == 2 and remote["methods"] == ["estimated"]

        page = httpx.get(f"{server.url}/serving", headers={**head, "Accept": "text/html"},
                         timeout=30)  # fmt: skip
        assert page.status_code == 200
        html = page.text
        assert "LLM serving · project chat" in html and "<strong>12</strong> requests" in html
        assert "J per output token" in html and 'data-kind="line"' in html
        assert all(x["name"] in html for x in remote["tenants"])
        assert _otlp_sum(collector, "greenml.llm.energy") == pytest.approx(
            local["attributed_j"], rel=1e-6)  # fmt: skip
        assert _otlp_sum(collector, "greenml.llm.requests") == 12
    finally:
        collector_cm.__exit__(None, None, None)
        if proc.poll() is None:
            proc.kill()
        server.stop()


def _otlp_sum(collector: object, name: str) -> float:
    """The newest cumulative value of an OTLP counter the collector received, over its series."""
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest,
    )

    latest = 0.0
    for req in collector.requests:  # type: ignore[attr-defined]
        message = ExportMetricsServiceRequest.FromString(req.body)
        for rm in message.resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name == name:
                        latest = sum(p.as_double or p.as_int for p in m.sum.data_points)
    return latest

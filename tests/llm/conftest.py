"""One real engine per test session, and proxies in front of it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.llm.engine import build_model, free_port, start_engine


@dataclass
class Engine:
    url: str
    model: str
    pid: int


@pytest.fixture(scope="session")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    pytest.importorskip("openai", reason="needs transformers[serving] (the serving extra)")
    root = tmp_path_factory.mktemp("engine")
    model = build_model(root / "tiny-llama")
    proc, url = start_engine(model, root / "engine.log")
    try:
        yield Engine(url, str(model), proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except Exception:
            proc.kill()


@dataclass
class Proxy:
    url: str
    app: Any
    server: Any
    thread: threading.Thread
    db: str

    def ledger(self) -> dict[str, Any]:
        return dict(httpx.get(self.url + "/greenml/ledger", timeout=10).json())

    def wait_settled(self, timeout_s: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while True:
            doc = self.ledger()
            if doc["in_flight"] == 0 and doc["unsettled_intervals"] == 0:
                return doc
            if time.monotonic() > deadline:
                raise AssertionError(f"not settled: {doc}")
            time.sleep(0.2)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


def start_proxy(
    upstream: str, db: str, *, engine_pid: int | None = None, uplink: Any = None, **options: Any
) -> Proxy:
    """A proxy on a free port in a thread (uvicorn), measuring with this machine's Meter."""
    import uvicorn

    from greenml.llm.meter_source import open_meter_source
    from greenml.llm.proxy_app import ProxyApp, ProxyConfig
    from greenml.llm.records import RecordWriter
    from greenml.store import open_store

    config = ProxyConfig(upstream=upstream, **options)
    source = open_meter_source(engine_pid, config.sample_hz)
    app = ProxyApp(config, source, writer=RecordWriter(open_store(db), flush_s=0.5), uplink=uplink)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("proxy did not start")
        time.sleep(0.05)
    return Proxy(f"http://127.0.0.1:{port}", app, server, thread, db)


@pytest.fixture(scope="module")
def proxy(engine: Engine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    db = f"sqlite:///{tmp_path_factory.mktemp('store') / 'greenml.db'}"
    p = start_proxy(engine.url, db, engine_pid=engine.pid)
    try:
        yield p
    finally:
        p.stop()


def db_path(proxy: Proxy) -> Path:
    return Path(proxy.db.removeprefix("sqlite:///"))

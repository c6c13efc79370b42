"""The proxy before a real engine (transformers serve, continuous batching), driven by openai."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import openai
import pytest

from tests.llm.conftest import Engine, Proxy, start_proxy
from tests.llm.engine import free_port, prompt

pytestmark = pytest.mark.timeout(900)

ENERGY_KEYS = {"energy_j", "uncertainty_j", "prefill_j", "decode_j", "co2eq_g", "method",
               "static_j", "dynamic_j", "idle_floor_w"}  # fmt: skip


def _client(url: str) -> openai.OpenAI:
    key = "sk-test-tenant-a"
    return openai.OpenAI(base_url=url + "/v1", api_key=key, timeout=600, max_retries=0)


def _chat(url: str, model: str, n_prompt: int, max_tokens: int, *, seed: int = 0,
          stream: bool = False) -> tuple[str, dict[str, Any]]:  # fmt: skip
    messages = [{"role": "user", "content": prompt(n_prompt, seed)}]
    client = _client(url)
    if not stream:
        r = client.chat.completions.create(
            model=model,
            messages=messages,
            max_tokens=max_tokens,
            temperature=0,  # type: ignore[arg-type]
        )
        usage = r.usage.model_dump() if r.usage else {}
        return r.choices[0].message.content or "", usage
    text, usage = "", {}
    for chunk in client.chat.completions.create(
        model=model,
        messages=messages,
        max_tokens=max_tokens,
        temperature=0,  # type: ignore[arg-type]
        stream=True,
        stream_options={"include_usage": True},
    ):
        for choice in chunk.choices:
            text += choice.delta.content or ""
        if chunk.usage is not None:
            usage = chunk.usage.model_dump()
    return text, usage


def test_content_identical_and_energy_in_every_response(engine: Engine, proxy: Proxy) -> None:
    direct, _ = _chat(engine.url, engine.model, 12, 8)  # also warms the engine up
    via, usage = _chat(proxy.url, engine.model, 12, 8)
    assert via == direct and via
    energy = usage["energy"]
    assert set(energy) >= ENERGY_KEYS and energy["status"] == "provisional"
    assert energy["energy_j"] > 0 and energy["method"] == "estimated"  # the CPU model here
    assert math.isclose(energy["prefill_j"] + energy["decode_j"], energy["energy_j"])
    assert math.isclose(energy["static_j"] + energy["dynamic_j"], energy["energy_j"])
    streamed, susage = _chat(proxy.url, engine.model, 12, 8, stream=True)
    assert streamed == direct
    assert set(susage["energy"]) >= ENERGY_KEYS and susage["energy"]["energy_j"] > 0
    assert susage["completion_tokens"] == 8 and susage["prompt_tokens"] == 12
    raw = httpx.post(
        proxy.url + "/v1/chat/completions", timeout=600,
        json={"model": engine.model, "max_tokens": 4, "temperature": 0,
              "messages": [{"role": "user", "content": prompt(5)}]},
    )  # fmt: skip
    assert float(raw.headers["x-greenml-energy-j"]) == pytest.approx(
        raw.json()["usage"]["energy"]["energy_j"], rel=1e-5
    )
    doc = proxy.wait_settled()
    settled = httpx.get(f"{proxy.url}/greenml/requests/{energy['request_id']}").json()
    assert settled["status"] == "completed" and settled["token_source"] == "usage"
    assert settled["prompt_tokens"] == 12 and settled["completion_tokens"] == 8
    assert doc["pending_j"] == pytest.approx(0.0, abs=1e-9)


def test_sixteen_concurrent_requests_conserve_energy(engine: Engine, proxy: Proxy) -> None:
    shapes = [(4 + 9 * (i % 5), 4 + 4 * (i % 3), i % 2 == 0) for i in range(16)]
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(
            lambda s: _chat(proxy.url, engine.model, s[0], s[1], seed=s[0], stream=s[2]), shapes
        ))  # fmt: skip
    for (n_prompt, n_out, _), (text, usage) in zip(shapes, results, strict=True):
        assert usage["energy"]["energy_j"] >= 0 and set(usage["energy"]) >= ENERGY_KEYS
        assert usage["prompt_tokens"] == n_prompt and usage["completion_tokens"] == n_out
        assert len(text.split()) == n_out
    doc = proxy.wait_settled()
    assert doc["metered_j"] > 0
    # conservation: every metered joule is attributed or idle, nothing pending or lost
    assert doc["attributed_j"] + doc["idle_j"] == pytest.approx(doc["metered_j"], rel=1e-12)
    # and the metered total is the Meter's own window over the same devices
    meter_total = proxy.app.source.total_j()
    assert meter_total >= doc["metered_j"]
    settled = list(proxy.app.settled.values())
    assert sum(r["energy_j"] for r in settled) == pytest.approx(doc["attributed_j"], rel=1e-9)
    # requests that generated more were charged more decode energy on average
    long = [r["decode_j"] for r in settled if r["completion_tokens"] == 12]
    short = [r["decode_j"] for r in settled if r["completion_tokens"] == 4]
    assert sum(long) / len(long) > sum(short) / len(short)
    proxy.app.writer.flush()
    out = subprocess.run(
        [sys.executable, "-m", "greenml", "llm", "stats", "--db", proxy.db, "--json"],
        capture_output=True, text=True, env={**os.environ, "GREENML_NO_UPLOAD": "1"}, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    stats = json.loads(out.stdout)
    for key in ("requests", "j_per_prompt_token", "j_per_output_token", "wh_per_1000_requests",
                "energy_j", "idle_share", "attributed_j", "idle_j", "metered_j", "co2eq_g",
                "prefill_decode_ratio"):  # fmt: skip
        assert key in stats
    assert stats["requests"] >= 16 and stats["j_per_output_token"] > 0
    assert set(stats["energy_j"]) == {"p50", "p95", "p99"}
    assert stats["attributed_j"] + stats["idle_j"] == pytest.approx(stats["metered_j"])
    metrics = httpx.get(proxy.url + "/metrics").text
    assert 'greenml_llm_energy_joules_total{model="' in metrics and 'phase="decode"' in metrics
    assert "greenml_llm_joules_per_token_bucket" in metrics


def test_client_leaving_mid_stream_is_stored_cancelled(engine: Engine, proxy: Proxy) -> None:
    body = {"model": engine.model, "max_tokens": 64, "temperature": 0, "stream": True,
            "messages": [{"role": "user", "content": prompt(8, 3)}]}  # fmt: skip
    with (
        httpx.Client(timeout=600) as client,
        client.stream("POST", proxy.url + "/v1/chat/completions", json=body) as response,
    ):
        for line in response.iter_lines():
            if '"content": "' in line or '"content":"' in line:
                break  # the first generated token: leave
    proxy.wait_settled(120)
    cancelled = [r for r in proxy.app.settled.values() if r["status"] == "cancelled"]
    assert cancelled and cancelled[-1]["energy_j"] > 0
    assert (cancelled[-1]["completion_tokens"] or 0) < 64


def test_passthrough_of_other_paths(engine: Engine, proxy: Proxy) -> None:
    direct = httpx.get(engine.url + "/v1/models", timeout=60)
    via = httpx.get(proxy.url + "/v1/models", timeout=60)
    assert via.status_code == direct.status_code and via.json() == direct.json()
    assert "x-greenml-energy-j" not in via.headers


def test_engine_down_gives_502_and_idle(tmp_path: Any) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    p = start_proxy(dead, f"sqlite:///{tmp_path / 'g.db'}", sample_hz=20.0)
    try:
        r = httpx.post(p.url + "/v1/chat/completions", json={"model": "m", "messages": []})
        assert r.status_code == 502
        assert r.text.count("\n") == 0 and "unreachable" in r.json()["error"]["message"]
        doc = p.wait_settled()
        assert doc["attributed_j"] == 0.0 and doc["idle_j"] == pytest.approx(doc["metered_j"])
    finally:
        p.stop()


def test_oversized_body_refused_before_the_engine(engine: Engine, tmp_path: Any) -> None:
    p = start_proxy(engine.url, f"sqlite:///{tmp_path / 'g.db'}", max_body_bytes=1024)
    try:
        big = {"model": engine.model, "messages": [{"role": "user", "content": "w1 " * 2000}]}
        r = httpx.post(p.url + "/v1/chat/completions", json=big, timeout=60)
        assert r.status_code == 413 and "too_large" in r.text
        assert p.ledger()["in_flight"] == 0 and not p.app.settled
    finally:
        p.stop()

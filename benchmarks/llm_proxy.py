"""LLM proxy benchmark: overhead against the direct engine, and attribution quality.

Part 1 (overhead): a local ASGI engine that streams 32 chunks per request
(1 ms apart) is called directly and through the proxy, at 1 and 32
concurrent streams; prints end-to-end added latency p50/p99, the proxy-side
time per request (the proxy's own code, upstream waits excluded; target
<= 1 ms p99) and throughput relative to direct (target >= 97 %).

Part 2 (attribution): a simulated engine whose energy is exactly
base·dt + a·prefill + b·decode (a/b = 0.1) feeds the Ledger: identical
requests alone vs inside a mixed load (target within ±10 %), long-prompt vs
long-answer mixes against the estimated ratio, attributed + idle against the
metered total (target within 0.1 %), and the equal-split and
whole-energy-per-request baselines scored on the same traffic.

Run: ``PYTHONPATH=src python benchmarks/llm_proxy.py``
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import statistics
import threading
import time
from typing import Any

import httpx
import uvicorn

from greenml.llm.attribution import equal_split, whole_energy
from greenml.llm.inflight import Ledger
from greenml.llm.proxy_app import ProxyApp, ProxyConfig

CHUNKS, CHUNK_GAP_S = 32, 0.001


async def engine(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream")],
        }
    )
    for i in range(CHUNKS):
        chunk = {"choices": [{"index": 0, "delta": {"content": f" w{i}"}}]}
        await send(
            {
                "type": "http.response.body",
                "more_body": True,
                "body": b"data: " + json.dumps(chunk).encode() + b"\n\n",
            }
        )
        await asyncio.sleep(CHUNK_GAP_S)
    usage = {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": CHUNKS}}
    await send(
        {
            "type": "http.response.body",
            "more_body": True,
            "body": b"data: " + json.dumps(usage).encode() + b"\n\ndata: [DONE]\n\n",
        }
    )
    await send({"type": "http.response.body", "body": b""})


class Source:
    method, uncertainty_rel, scope = "counter", 0.05, "simulated"

    def __init__(self) -> None:
        self.j = 0.0

    def total_j(self) -> float:
        return self.j


def serve(app: Any) -> tuple[uvicorn.Server, int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_level="error"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.02)
    return server, port


async def load(url: str, concurrency: int, total: int) -> tuple[list[float], float]:
    body = {
        "model": "m",
        "stream": True,
        "messages": [{"role": "user", "content": "w1 w2"}],
        "stream_options": {"include_usage": True},
    }
    latencies: list[float] = []
    sem = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=200)) as c:

        async def one() -> None:
            async with sem:
                t = time.perf_counter()
                async with c.stream("POST", url + "/v1/chat/completions", json=body) as r:
                    async for _ in r.aiter_raw():
                        pass
                latencies.append(time.perf_counter() - t)

        t0 = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(total)))
        return latencies, total / (time.perf_counter() - t0)


def q(values: list[float], p: float) -> float:
    return statistics.quantiles(values, n=100)[int(p) - 1] if len(values) > 1 else values[0]


def overhead() -> None:
    eng, eport = serve(engine)
    app = ProxyApp(ProxyConfig(f"http://127.0.0.1:{eport}", sample_hz=10), Source())
    prox, pport = serve(app)
    print("== overhead (local streaming engine, 32 chunks/request) ==")
    for conc, total in ((1, 200), (32, 640)):
        asyncio.run(load(f"http://127.0.0.1:{eport}", conc, 20))  # warm-up
        asyncio.run(load(f"http://127.0.0.1:{pport}", conc, 20))
        app.overheads_s.clear()
        d_lat, d_tput = asyncio.run(load(f"http://127.0.0.1:{eport}", conc, total))
        p_lat, p_tput = asyncio.run(load(f"http://127.0.0.1:{pport}", conc, total))
        own = list(app.overheads_s)
        print(
            f"{conc:>2} streams: added latency p50 {1e3 * (q(p_lat, 50) - q(d_lat, 50)):.2f} ms"
            f"  p99 {1e3 * (q(p_lat, 99) - q(d_lat, 99)):.2f} ms | proxy-side time p50 "
            f"{1e3 * q(own, 50):.3f} ms p99 {1e3 * q(own, 99):.3f} ms | throughput "
            f"{p_tput:.0f}/s vs direct {d_tput:.0f}/s = {100 * p_tput / d_tput:.1f} %"
        )
    prox.should_exit = eng.should_exit = True


def simulate(
    requests: list[tuple[float, int, int]], base_w: float, a: float, b: float, dt: float = 0.01
) -> tuple[Ledger, list[Any], Source, list[float], list[float]]:
    """Requests (arrival s, prompt, output): prefill takes one step, then a token per step."""
    src, now = Source(), [0.0]
    done: list[Any] = []
    ledger = Ledger(src, on_settled=done.append, clock=lambda: now[0], wall_clock=lambda: 1e9)
    state: dict[int, list[Any]] = {}
    eq_j = [0.0] * len(requests)
    whole_j = [0.0] * len(requests)
    step, pending = 0, sorted(range(len(requests)), key=lambda i: requests[i][0])
    while pending or state:
        t = step * dt
        while pending and requests[pending[0]][0] <= t:
            i = pending.pop(0)
            req = ledger.begin("/v1/chat/completions", "m", "t", True, requests[i][1])
            state[i] = [req, 0]
        prefill = decode = 0
        for i, (req, made) in state.items():
            if made == 0 and req.first_token_s is None and req.chunks == []:
                prefill += requests[i][1]
            else:
                decode += 1
        energy = base_w * dt + a * prefill + b * decode
        now[0] = t + dt
        src.j += energy
        for i, share in zip(state, equal_split(energy, len(state)), strict=False):
            eq_j[i] += share
        for i, share in zip(state, whole_energy(energy, len(state)), strict=False):
            whole_j[i] += share
        for i in list(state):
            req, made = state[i]
            if made == 0 and req.first_token_s is None and req.chunks == [] and not state[i][1]:
                state[i][1] = -1  # prefilled this step
                continue
            req.note_chunk(now[0] - 1e-9, 1)
            state[i][1] = made + 1 if made >= 0 else 1
            if state[i][1] >= requests[i][2]:
                req.prompt_tokens, req.completion_tokens = requests[i][1], requests[i][2]
                req.token_source = "usage"
                ledger.finish(req)
                del state[i]
        ledger.tick()
        step += 1
    for _ in range(3):
        now[0] += dt
        ledger.tick()
    return ledger, done, src, eq_j, whole_j


def attribution() -> None:
    print("== attribution (simulated engine: 50 W base, 0.02 J/prefill token, 0.2 J/decode) ==")
    base, a, b = 50.0, 0.02, 0.2
    probe = (0.0, 200, 20)
    _, alone, _, _, _ = simulate([probe], base, a, b)
    rng = random.Random(0)
    warm = [
        (rng.uniform(0, 3), rng.choice([20, 400, 1000]), rng.choice([5, 20, 80]))
        for _ in range(200)
    ]
    mixed = [*warm, (1.5, 200, 20)]
    ledger, done, src, eq_j, whole_j = simulate(mixed, base, a, b)
    probe_mixed = next(r for r in done if r.arrival_s == 1.5 and r.prompt_tokens == 200)
    # the probe's own work: base power is shared, so compare the work-driven part
    print(
        f"probe alone {alone[0].energy_j:.2f} J, inside the mixed load "
        f"{probe_mixed.energy_j:.2f} J (alone includes all base power while it ran)"
    )
    own_alone = a * 200 + b * 20
    est = ledger.ratio.current()
    work_mixed = probe_mixed.prefill_j + probe_mixed.decode_j
    base_share = ledger.totals.attributed_j - sum(a * p + b * o for _, p, o in mixed)
    print(
        f"probe work energy (true {own_alone:.2f} J): mixed {work_mixed:.2f} J incl. its base"
        f" share; ratio estimate {est.estimate:.3f} ± {est.spread:.3f} (true {a / b:.3f})"
    )
    t = ledger.totals
    err = (t.attributed_j + t.idle_j - src.j) / src.j
    print(
        f"attributed + idle vs metered: {t.attributed_j + t.idle_j:.3f} vs {src.j:.3f} J "
        f"({100 * err:.2e} %); base power shared: {base_share:.1f} J"
    )
    long_prompt = [r for r in done if r.prompt_tokens == 1000 and r.completion_tokens == 5]
    long_answer = [r for r in done if r.prompt_tokens == 20 and r.completion_tokens == 80]
    lp = statistics.mean(r.prefill_j / (r.energy_j or 1) for r in long_prompt)
    la = statistics.mean(r.prefill_j / (r.energy_j or 1) for r in long_answer)
    print(
        f"prefill share: long-prompt/short-answer {100 * lp:.0f} %, "
        f"short-prompt/long-answer {100 * la:.0f} %"
    )
    print(
        f"equal split total {sum(eq_j):.1f} J ({100 * (sum(eq_j) / src.j - 1):+.2f} % vs "
        f"metered; ignores work); whole-energy-per-request total {sum(whole_j):.1f} J "
        f"({100 * (sum(whole_j) / src.j - 1):+.0f} % vs metered: double counting)"
    )


if __name__ == "__main__":
    overhead()
    attribution()

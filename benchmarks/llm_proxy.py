"""LLM proxy benchmark: overhead against the direct engine, and attribution quality.

Part 1 (overhead): a local ASGI engine that streams 32 chunks per request
(1 ms apart) is called directly and through the proxy, at 1 and 32
concurrent streams; prints end-to-end added latency p50/p99, the proxy-side
time per request (the proxy's own code, upstream waits excluded; target
<= 1 ms p99) and throughput relative to direct (target >= 97 %).

Part 2 (attribution): a simulated engine whose energy is exactly
base·dt + a·prefill + b·decode (a/b = 0.1) feeds the Ledger: identical
requests alone vs inside a mixed load, above the measured idle floor (target
within ±10 %), long-prompt vs
long-answer mixes against the estimated ratio, attributed + idle against the
metered total (target within 0.1 %), and the equal-split and
whole-energy-per-request baselines scored on the same traffic.

Run: ``PYTHONPATH=src python benchmarks/llm_proxy.py``
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

import httpx
import uvicorn

from greenml.llm.attribution import equal_split, whole_energy
from greenml.llm.inflight import Ledger
from greenml.llm.proxy_app import ProxyApp, ProxyConfig

CHUNKS = 32
CHUNK_GAP_S = float(os.environ.get("BENCH_CHUNK_GAP_MS", "20")) / 1000
"""20 ms between tokens: 50 tokens/s a stream, an 8B model's decode on an H100 class GPU;
BENCH_CHUNK_GAP_MS=1 is a stress test (1,000 tokens/s a stream)."""


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


def serve(app: Any, port: int = 0) -> tuple[uvicorn.Server, int]:
    if not port:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_level="error"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.02)
    return server, port


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class BenchProxy:
    """The proxy app, plus ``/bench/overheads`` (its proxy-side times) for this script."""

    def __init__(self, upstream: str) -> None:
        self.app = ProxyApp(ProxyConfig(upstream, sample_hz=10), Source())

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/bench/overheads":
            body = json.dumps(self.app.overheads_s).encode()
            self.app.overheads_s.clear()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


class BareRelay:
    """A relay with no greenml in it (the same uvicorn + httpx stack): the cost of a hop."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.client: httpx.AsyncClient | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if self.client is None:
            self.client = httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=500))
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = self.client.build_request(
            "POST", self.upstream + scope["path"], content=body,
            headers={"content-type": "application/json"},
        )  # fmt: skip
        upstream = await self.client.send(request, stream=True)
        await send({"type": "http.response.start", "status": upstream.status_code,
                    "headers": [(b"content-type", b"text/event-stream")]})  # fmt: skip
        async for raw in upstream.aiter_raw():
            await send({"type": "http.response.body", "body": raw, "more_body": True})
        await upstream.aclose()
        await send({"type": "http.response.body", "body": b""})


def cpu_s(proc: subprocess.Popen[bytes]) -> float:
    """CPU seconds a child has used (user + system): its cost, whatever else runs."""
    import psutil

    times = psutil.Process(proc.pid).cpu_times()
    return float(times.user + times.system)


def child(role: str, port: int, upstream: str = "") -> subprocess.Popen[bytes]:
    """This script as the engine or the proxy, in a process of its own."""
    cmd = [sys.executable, __file__, f"--{role}", str(port), upstream]
    proc = subprocess.Popen(cmd, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
            return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"{role} did not start")


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
    """Engine, proxies and load generator in separate processes, as in production."""
    eport, pport, rport = free_port(), free_port(), free_port()
    eng = child("engine", eport)
    prox = child("proxy", pport, f"http://127.0.0.1:{eport}")
    relay = child("relay", rport, f"http://127.0.0.1:{eport}")
    print("== overhead (engine, proxy, bare relay and client in separate processes; "
          "32 chunks/request) ==")  # fmt: skip
    try:
        scale = max(1, round(0.02 / CHUNK_GAP_S))  # as many requests as time allows
        print(f"token gap {1e3 * CHUNK_GAP_S:g} ms")
        for conc, total in ((1, 40 * scale), (32, 320 * min(scale, 3))):
            for port in (eport, rport, pport):
                asyncio.run(load(f"http://127.0.0.1:{port}", conc, 40))  # warm-up
            httpx.get(f"http://127.0.0.1:{pport}/bench/overheads")
            d_lat, d_tput = asyncio.run(load(f"http://127.0.0.1:{eport}", conc, total))
            c0 = cpu_s(relay)
            r_lat, r_tput = asyncio.run(load(f"http://127.0.0.1:{rport}", conc, total))
            c1 = cpu_s(relay), cpu_s(prox)
            p_lat, p_tput = asyncio.run(load(f"http://127.0.0.1:{pport}", conc, total))
            relay_cpu, proxy_cpu = (c1[0] - c0) / total, (cpu_s(prox) - c1[1]) / total
            own = httpx.get(f"http://127.0.0.1:{pport}/bench/overheads").json()
            for name, lat, tput in (("bare relay", r_lat, r_tput), ("greenml", p_lat, p_tput)):
                print(
                    f"{conc:>2} streams, {name:>10}: added latency p50 "
                    f"{1e3 * (q(lat, 50) - q(d_lat, 50)):.2f} ms p99 "
                    f"{1e3 * (q(lat, 99) - q(d_lat, 99)):.2f} ms | throughput {tput:.1f}/s vs "
                    f"direct {d_tput:.1f}/s = {100 * tput / d_tput:.1f} % (target >= 97 %)"
                )
            print(
                f"{conc:>2} streams, CPU per request: greenml {1e3 * proxy_cpu:.2f} ms, bare relay "
                f"{1e3 * relay_cpu:.2f} ms -> greenml's own {1e3 * (proxy_cpu - relay_cpu):.2f} ms"
                f" (target <= 1 ms); wall proxy-side time (code + socket writes, waits "
                f"excluded) p50 {1e3 * q(own, 50):.2f} ms p99 {1e3 * q(own, 99):.2f} ms"
            )
    finally:
        for proc in (prox, relay, eng):
            proc.terminate()
            proc.wait(timeout=30)


def simulate(
    requests: list[tuple[float, int, int]], base_w: float, a: float, b: float, dt: float = 0.01
) -> tuple[Ledger, list[Any], Source, list[float], list[float]]:
    """Requests (arrival s, prompt, output) on a step engine: the step a request arrives in
    runs its prefill (a J per prompt token) and yields its first token, as engines do; each
    later step yields one token per request (b J each). Energy of a step: base·dt + work."""
    src, now = Source(), [0.0]
    done: list[Any] = []
    ledger = Ledger(src, on_settled=done.append, clock=lambda: now[0], wall_clock=lambda: 1e9)
    made: dict[int, int] = {}
    reqs: dict[int, Any] = {}
    eq_j = [0.0] * len(requests)
    whole_j = [0.0] * len(requests)
    step, pending = 0, sorted(range(len(requests)), key=lambda i: requests[i][0])
    while pending or made:
        t = step * dt
        now[0] = t
        arrived = []
        while pending and requests[pending[0]][0] <= t:
            i = pending.pop(0)
            reqs[i] = ledger.begin("/v1/chat/completions", "m", "t", True, requests[i][1])
            arrived.append(i)
        work = sum(a * requests[i][1] for i in arrived) + b * (len(made))
        energy = base_w * dt + work
        running = [*made, *arrived]
        now[0] = t + dt
        src.j += energy
        for i, share in zip(running, equal_split(energy, len(running)), strict=True):
            eq_j[i] += share
        for i, share in zip(running, whole_energy(energy, len(running)), strict=True):
            whole_j[i] += share
        for i in running:
            made[i] = made.get(i, 0) + 1
            reqs[i].note_chunk(now[0] - 1e-9, 1)
            if made[i] >= requests[i][2]:
                req = reqs.pop(i)
                req.prompt_tokens, req.completion_tokens = requests[i][1], requests[i][2]
                req.token_source = "usage"
                ledger.finish(req)
                del made[i]
        ledger.tick()
        step += 1
    for _ in range(3):
        now[0] += dt
        ledger.tick()
    return ledger, done, src, eq_j, whole_j


def attribution() -> None:
    print("== attribution (simulated engine: 50 W base, 0.02 J/prefill token, 0.2 J/decode) ==")
    base, a, b = 50.0, 0.02, 0.2
    _, alone, _, _, _ = simulate([(0.5, 200, 20)], base, a, b)  # idle first: the floor is seen
    rng = random.Random(0)
    warm = [
        (rng.uniform(0.5, 3.5), rng.choice([20, 400, 1000]), rng.choice([5, 20, 80]))
        for _ in range(200)
    ]
    mixed = [*warm, (2.0, 200, 20)]
    ledger, done, src, eq_j, whole_j = simulate(mixed, base, a, b)
    probe_mixed = next(r for r in done if r.arrival_s == 2.0 and r.prompt_tokens == 200)
    own = a * 200 + b * 19  # the first token comes with the prefill
    solo, crowd = alone[0].dynamic_j, probe_mixed.dynamic_j
    print(
        f"probe (200 prompt, 20 output tokens; its own work {own:.2f} J): dynamic energy alone "
        f"{solo:.2f} J, inside 200 mixed requests {crowd:.2f} J -> "
        f"{100 * (crowd / solo - 1):+.1f} % (target within ±10 %)"
    )
    print(
        f"  with its share of the idle floor: alone {alone[0].energy_j:.2f} J, mixed "
        f"{probe_mixed.energy_j:.2f} J (the floor is shared by the crowd: batching's economy)"
    )
    est = ledger.ratio.current()
    print(f"ratio estimate {est.estimate:.3f} ± {est.spread:.3f} (true {a / b:.3f}); idle floor "
          f"{ledger.floor.floor_w:.1f} W (true {base:.1f} W)")  # fmt: skip
    t = ledger.totals
    err = (t.attributed_j + t.idle_j - src.j) / src.j
    print(
        f"attributed + idle vs metered: {t.attributed_j + t.idle_j:.3f} vs {src.j:.3f} J "
        f"({100 * err:.2e} %, target within 0.1 %)"
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
    if len(sys.argv) > 2 and sys.argv[1] == "--engine":
        uvicorn.run(engine, port=int(sys.argv[2]), log_level="error")
    elif len(sys.argv) > 3 and sys.argv[1] == "--relay":
        uvicorn.run(BareRelay(sys.argv[3]), port=int(sys.argv[2]), log_level="error")
    elif len(sys.argv) > 3 and sys.argv[1] == "--proxy":
        uvicorn.run(BenchProxy(sys.argv[3]), port=int(sys.argv[2]), log_level="error")
    else:
        overhead()
        attribution()

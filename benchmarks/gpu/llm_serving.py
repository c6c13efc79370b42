"""LLM serving: J per output and per prompt token at 1, 8 and 32 streams, proxy against the counter.

A Llama-architecture model with random weights (about 0.5 B parameters, bf16,
built here: nothing is downloaded) is served by ``transformers serve
--continuous-batching`` on the GPU, behind ``greenml llm proxy`` when that
command exists. The ``openai`` client drives it with 1, 8 and 32 concurrent
streams. For each level the script reads the raw NVML energy counter (a
thread samples it every 20 ms, so any span can be read off) and prints:

- J per output token from the counter (all of the GPU's energy over the load
  span, divided by the output tokens), and from the proxy: J per prompt token
  and per output token (``greenml llm stats``);
- attributed + idle energy of the proxy against the counter over the proxy's
  life, and attributed alone against the counter over the load span;
- the proxy's overhead: latency of short requests direct vs through the proxy.

Without the proxy command it says "proxy not available" and still measures the
engine's J/token from the counter. In ``--cpu-smoke`` mode a stub OpenAI-
compatible engine stands in for transformers (set GREENML_GPU_SMOKE_ENGINE=
transformers for the real engine on the CPU; its first request takes ~30 s).

    python benchmarks/gpu/llm_serving.py --out DIR [--cpu-smoke]
"""

from __future__ import annotations

import itertools
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from _common import REPO, Part, counter_j, first_handle, median, pct

LEVELS = ((1, 3), (8, 16), (32, 64))  # (concurrent streams, requests)
SMOKE_LEVELS = ((1, 2), (8, 8), (32, 32))
OUTPUT_TOKENS = 64
PROMPT_WORDS = 200
SPECIALS = ("<unk>", "<s>", "</s>", "<pad>")


# ----------------------------------------------------------------- the model


def build_model(directory: Path, smoke: bool) -> dict[str, Any]:
    """A random-weight Llama and a word-level tokenizer saved in ``directory``."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocab_size = 1004 if smoke else 32000
    vocab = {tok: i for i, tok in enumerate(SPECIALS)}
    vocab.update({f"w{i}": i + len(SPECIALS) for i in range(vocab_size - len(SPECIALS))})
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
    )
    fast.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
    shape = (
        {
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
        }
        if smoke
        else {
            "hidden_size": 1536,
            "intermediate_size": 4096,
            "num_hidden_layers": 16,
            "num_attention_heads": 12,
            "num_key_value_heads": 4,
        }
    )
    config = LlamaConfig(
        vocab_size=vocab_size,
        max_position_embeddings=2048,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=3,
        tie_word_embeddings=False,
        **shape,
    )
    torch.manual_seed(0)
    device = "cpu" if smoke else "cuda"
    with torch.device(device):
        model = LlamaForCausalLM(config)
    if not smoke:
        model = model.to(torch.bfloat16)
    params = sum(p.numel() for p in model.parameters())
    model.save_pretrained(directory)
    fast.save_pretrained(directory)
    del model
    if not smoke:
        torch.cuda.empty_cache()
    return {
        "parameters": params,
        "vocab_size": vocab_size,
        **shape,
        "dtype": "float32" if smoke else "bfloat16",
    }


def prompt(rng: random.Random, vocab_size: int) -> str:
    return " ".join(f"w{rng.randrange(vocab_size - len(SPECIALS))}" for _ in range(PROMPT_WORDS))


# --------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Service:
    """A child process (in the part's process group, which run_all stops), its log, its port."""

    name: str
    port: int
    proc: subprocess.Popen[bytes] | None = None
    log: Path | None = None
    stop_fn: Callable[[], None] | None = None

    def stop(self) -> None:
        if self.stop_fn is not None:
            self.stop_fn()
            self.stop_fn = None
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def tail(self, lines: int = 15) -> str:
        if self.log is None or not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def spawn(name: str, cmd: list[str], port: int, workdir: Path) -> Service:
    log = workdir / f"{name}.log"
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=REPO)
    return Service(name, port, proc, log)


def wait_listening(service: Service, deadline: float, path: str = "/health") -> bool:
    """Until ``path`` answers (any HTTP status) or the process dies or time runs out."""
    import httpx

    while time.monotonic() < deadline:
        if service.proc is not None and service.proc.poll() is not None:
            return False
        try:
            httpx.get(f"http://127.0.0.1:{service.port}{path}", timeout=1.0)
            return True
        except httpx.HTTPError:
            time.sleep(0.2)
    return False


def greenml_cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "greenml", *args]


def proxy_available() -> tuple[bool, str]:
    proc = subprocess.run(
        greenml_cli("llm", "proxy", "--help"), capture_output=True, text=True, cwd=REPO, timeout=60
    )
    if proc.returncode == 0:
        return True, ""
    return False, (proc.stderr.strip().splitlines() or ["no output"])[-1]


# --------------------------------------------------------------- stub engine


class _Stub(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint that streams ``w1 w2 …`` (CPU smoke only)."""

    protocol_version = "HTTP/1.0"

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        body = b'{"status": "ok"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        n = int(req.get("max_tokens") or req.get("max_completion_tokens") or 16)
        prompt_tokens = sum(len(m["content"].split()) for m in req["messages"])
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": n,
            "total_tokens": prompt_tokens + n,
        }
        base = {"id": "stub", "created": int(time.time()), "model": req["model"]}
        if not req.get("stream"):
            time.sleep(0.002 * n)
            body = json.dumps(
                {
                    **base,
                    "object": "chat.completion",
                    "usage": usage,
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "length",
                            "message": {"role": "assistant", "content": " ".join(["w1"] * n)},
                        }
                    ],
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        chunk = {**base, "object": "chat.completion.chunk"}
        for i in range(n):
            time.sleep(0.002)
            delta = {
                "index": 0,
                "delta": {"content": "w1 "},
                "finish_reason": None if i < n - 1 else "length",
            }
            self.wfile.write(f"data: {json.dumps({**chunk, 'choices': [delta]})}\n\n".encode())
            self.wfile.flush()
        if (req.get("stream_options") or {}).get("include_usage"):
            last = {**chunk, "choices": [], "usage": usage}
            self.wfile.write(f"data: {json.dumps(last)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")


class _StubServer(ThreadingHTTPServer):
    request_queue_size = 128  # 32 streams connect at once: the default backlog (5) drops some
    daemon_threads = True


def stub_engine() -> Service:
    server = _StubServer(("127.0.0.1", 0), _Stub)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop() -> None:
        server.shutdown()
        server.server_close()

    return Service("stub-engine", int(server.server_address[1]), stop_fn=stop)


# ---------------------------------------------------------------- measuring


class CounterTrace(threading.Thread):
    """The raw NVML energy counter every 20 ms; ``joules(t0, t1)`` reads any span off it."""

    def __init__(self, nvml: Any, handle: Any) -> None:
        super().__init__(daemon=True, name="counter")
        self.read = lambda: counter_j(nvml, handle)
        self.points: list[tuple[float, float]] = [(time.monotonic(), self.read())]
        self.wall_offset = time.time() - time.monotonic()  # wall → monotonic, for stored rows
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.02):
            self.points.append((time.monotonic(), self.read()))

    def at(self, t: float) -> float:
        pts = self.points
        if t <= pts[0][0]:
            return pts[0][1]
        for (t0, e0), (t1, e1) in itertools.pairwise(pts):
            if t0 <= t <= t1:
                return e0 + (e1 - e0) * ((t - t0) / (t1 - t0) if t1 > t0 else 0.0)
        return pts[-1][1]

    def joules(self, t0: float, t1: float) -> float:
        return self.at(t1) - self.at(t0)

    def joules_wall(self, t0: float, t1: float) -> float:
        """Joules between two wall-clock (Unix) times."""
        return self.joules(t0 - self.wall_offset, t1 - self.wall_offset)


def metered_span(db_path: Path) -> dict[str, Any] | None:
    """The proxy's stored rows: their wall-clock span and energy (attributed and idle)."""
    import sqlite3

    if not db_path.exists():
        return None
    with sqlite3.connect(db_path) as con:
        row = con.execute(
            "SELECT min(started_at), max(ended_at), count(*), "
            "sum(CASE WHEN status = 'idle' THEN energy_j ELSE 0 END), "
            "sum(CASE WHEN status != 'idle' THEN energy_j ELSE 0 END) FROM llm_requests"
        ).fetchone()
    if row is None or row[0] is None:
        return None
    start, end, n, idle, attributed = row
    return {"start": start, "end": end, "rows": n, "idle_j": idle, "attributed_j": attributed}


@dataclass
class Reply:
    sent: float
    first: float | None = None
    done: float = 0.0
    prompt_tokens: int = 0
    output_tokens: int = 0
    energy: dict[str, Any] | None = None
    error: str = ""
    chunks: int = 0  # content chunks: the output tokens when the engine sends no usage
    usage: bool = False


def stream_one(client: Any, model: str, text: str, max_tokens: int) -> Reply:
    reply = Reply(time.monotonic())
    try:
        stream = client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": text}],
            max_tokens=max_tokens,
            stream=True,
            stream_options={"include_usage": True},
        )
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                reply.chunks += 1
                if reply.first is None:
                    reply.first = time.monotonic()
            if chunk.usage is not None:
                reply.usage = True
                reply.prompt_tokens = chunk.usage.prompt_tokens
                reply.output_tokens = chunk.usage.completion_tokens
                extra = chunk.usage.model_dump()
                reply.energy = extra.get("energy")
    except Exception as exc:
        reply.error = f"{type(exc).__name__}: {exc}"[:200]
    reply.done = time.monotonic()
    return reply


def drive(
    base_url: str,
    model: str,
    streams: int,
    requests: int,
    vocab: int,
    max_tokens: int = OUTPUT_TOKENS,
) -> list[Reply]:
    from openai import OpenAI

    client = OpenAI(base_url=base_url, api_key="none", max_retries=0, timeout=300.0)
    rng = random.Random(streams)
    texts = [prompt(rng, vocab) for _ in range(requests)]
    with ThreadPoolExecutor(max_workers=streams) as pool:
        return list(pool.map(lambda t: stream_one(client, model, t, max_tokens), texts))


def latency(base_url: str, model: str, vocab: int) -> float:
    """Seconds of one short non-streamed request."""
    from openai import OpenAI

    client = OpenAI(base_url=base_url, api_key="none", max_retries=0, timeout=120.0)
    text = prompt(random.Random(7), vocab)[:200]
    t = time.perf_counter()
    client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": text}], max_tokens=8
    )
    return time.perf_counter() - t


def closure(level: dict[str, Any]) -> float | None:
    """(attributed + idle) / counter − 1: from the stats, else from the stored rows."""
    rel = level.get("attributed_plus_idle_vs_counter_rel")
    if rel is None:
        rel = (level.get("metered_span") or {}).get("metered_vs_counter_rel")
    return rel


@dataclass
class Run:
    """Everything the script started, stopped in reverse at the end."""

    services: list[Service] = field(default_factory=list)

    def close(self) -> None:
        for s in reversed(self.services):
            s.stop()


# -------------------------------------------------------------------- main


def main() -> None:
    part = Part("llm_serving", __doc__.splitlines()[0], budget_s=110)
    part.parse()
    part.exit_on_sigterm()
    part.require_gpu()
    nvml = part.nvml()
    handle = first_handle(nvml)
    env = part.environment()
    try:
        import transformers

        env["transformers"] = transformers.__version__
    except ImportError:
        env["transformers"] = None
    part.figures["environment"] = env
    work = Path(tempfile.mkdtemp(prefix="greenml-llm-"))
    model_dir = work / "model"
    use_stub = part.smoke and os.environ.get("GREENML_GPU_SMOKE_ENGINE") != "transformers"
    t = time.monotonic()
    if use_stub:  # no model needed: the stub streams made-up words
        info = {"parameters": 0, "vocab_size": 1004, "dtype": "float32"}
    else:
        info = build_model(model_dir, part.smoke)
    part.figures["model"] = info
    info["build_s"] = time.monotonic() - t
    print(
        f"model: {info['parameters'] / 1e6:.0f} M parameters, {info['dtype']}, built in "
        f"{info['build_s']:.1f} s"
    )
    vocab = int(info["vocab_size"])
    model_name = str(model_dir)

    counter = CounterTrace(nvml, handle)
    counter.start()
    run = Run()
    status = "ok"
    try:
        if use_stub:
            engine = stub_engine()
            part.figures["engine"] = "stub (CPU smoke)"
        else:
            port = free_port()
            cmd = [
                sys.executable,
                "-m",
                "transformers.cli.transformers",
                "serve",
                "--continuous-batching",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--device",
                "cpu" if part.smoke else "cuda:0",
                "--dtype",
                info["dtype"],
                model_name,
            ]
            engine = spawn("engine", cmd, port, work)
            part.figures["engine"] = "transformers serve --continuous-batching"
        run.services.append(engine)
        t = time.monotonic()
        if not wait_listening(engine, min(part.deadline - 20, time.monotonic() + 90)):
            print("engine did not come up:\n" + engine.tail())
            part.finish("failed", reason="engine did not start", engine_log=engine.tail(40))
            return
        direct = f"http://127.0.0.1:{engine.port}/v1"
        warm = stream_one(
            __import__("openai").OpenAI(base_url=direct, api_key="none"),
            model_name,
            prompt(random.Random(0), vocab),
            8,
        )
        part.figures["engine_ready_s"] = time.monotonic() - t
        if warm.error:
            print("warm-up request failed:", warm.error, "\n" + engine.tail())
            part.finish("failed", reason=f"warm-up: {warm.error}", engine_log=engine.tail(40))
            return
        drive(direct, model_name, 8, 8, vocab, max_tokens=8)  # batched shapes warmed too
        part.figures["engine_warm_s"] = time.monotonic() - t
        time.sleep(1.0)
        t_idle = time.monotonic()
        time.sleep(1.0)
        part.figures["idle_power_w"] = counter.joules(t_idle, time.monotonic()) / (
            time.monotonic() - t_idle
        )

        has_proxy, why = proxy_available()
        part.figures["proxy"] = "available" if has_proxy else f"proxy not available ({why})"
        if not has_proxy:
            print(f"proxy not available ({why}): measuring the engine alone from the counter")

        rows = []
        levels = SMOKE_LEVELS if part.smoke else LEVELS
        for streams, requests in levels:
            if part.left_s() < (15 if not part.smoke else 3):
                print(f"{streams} streams: skipped, {part.left_s():.0f} s left")
                part.figures[f"streams_{streams}"] = {"skipped": "budget"}
                status = "partial"
                continue
            level: dict[str, Any] = {"streams": streams, "requests": requests}
            proxy = None
            base = direct
            if has_proxy:
                db = f"sqlite:///{work / f'proxy-{streams}.db'}"
                pport = free_port()
                proxy = spawn(
                    f"proxy-{streams}",
                    greenml_cli(
                        "llm",
                        "proxy",
                        "--upstream",
                        f"http://127.0.0.1:{engine.port}",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(pport),
                        "--db",
                        db,
                        "--sample-hz",
                        "10",
                    ),
                    pport,
                    work,
                )
                t_spawn = time.monotonic()
                if not wait_listening(proxy, time.monotonic() + 30):
                    print("proxy did not come up:\n" + proxy.tail())
                    level["proxy_error"] = proxy.tail(20)
                    proxy.stop()
                    proxy = None
                else:
                    run.services.append(proxy)
                    base = f"http://127.0.0.1:{pport}/v1"
                    level["proxy_up_after_s"] = time.monotonic() - t_spawn
                    banner = [ln for ln in proxy.tail(20).splitlines() if "energy of" in ln]
                    level["proxy_banner"] = banner[-1] if banner else None
                    if part.smoke and streams == 1:
                        print("smoke: the proxy meters this machine, not the fake GPU, so its")
                        print("figures cannot match the fake counter:", level["proxy_banner"])
            t_up = time.monotonic()
            if proxy is not None and streams == 1:
                lat: dict[str, list[float]] = {"direct": [], "proxy": []}
                latency(direct, model_name, vocab)
                latency(base, model_name, vocab)
                for _ in range(5 if not part.smoke else 2):
                    lat["direct"].append(latency(direct, model_name, vocab))
                    lat["proxy"].append(latency(base, model_name, vocab))
                d, p = median(lat["direct"]), median(lat["proxy"])
                part.figures["proxy_overhead"] = {
                    "direct_s": lat["direct"],
                    "proxy_s": lat["proxy"],
                    "median_direct_s": d,
                    "median_proxy_s": p,
                    "overhead_ms": (p - d) * 1e3,
                    "overhead_rel": p / d - 1,
                }
                part.table(
                    "Proxy overhead (8-token requests, medians)",
                    ["direct ms", "through proxy ms", "overhead ms", "overhead"],
                    [[d * 1e3, p * 1e3, (p - d) * 1e3, pct(p / d - 1)]],
                )
            replies = drive(base, model_name, streams, requests, vocab)
            ok = [r for r in replies if not r.error]
            level["errors"] = [r.error for r in replies if r.error][:5]
            level["usage_missing"] = sum(1 for r in ok if not r.usage)
            if level["usage_missing"]:
                print(f"{level['usage_missing']} replies without usage: tokens counted from chunks")
            t0 = min(r.sent for r in replies)
            t1 = max(r.done for r in replies)
            out_tok = sum(r.output_tokens for r in ok)
            in_tok = sum(r.prompt_tokens for r in ok)
            span_j = counter.joules(t0, t1)
            level.update(
                ok=len(ok),
                prompt_tokens=in_tok,
                output_tokens=out_tok,
                span_s=t1 - t0,
                counter_span_j=span_j,
                counter_j_per_output_token=span_j / out_tok if out_tok else None,
                counter_j_per_token=span_j / (out_tok + in_tok) if out_tok + in_tok else None,
                ttft_median_s=median([r.first - r.sent for r in ok if r.first is not None]),
                latency_median_s=median([r.done - r.sent for r in ok]),
                output_tokens_per_s=out_tok / (t1 - t0),
            )
            energies = [r.energy for r in ok if isinstance(r.energy, dict)]
            if energies:
                level["usage_energy_sum_j"] = sum(float(e.get("energy_j") or 0) for e in energies)
                level["usage_energy_with"] = len(energies)
                level["usage_energy_example"] = energies[0]
            if proxy is not None:
                time.sleep(1.5)  # the proxy settles each request at its meter's next ticks
                proxy.stop()
                t_down = time.monotonic()
                level["counter_proxy_life_j"] = counter.joules(t_up, t_down)
                try:
                    span = metered_span(work / f"proxy-{streams}.db")
                except Exception as exc:
                    span = None
                    level["metered_span_error"] = f"{type(exc).__name__}: {exc}"
                if span is not None:
                    ref = counter.joules_wall(span["start"], span["end"])
                    metered = span["idle_j"] + span["attributed_j"]
                    span.update(seconds=span["end"] - span["start"], counter_j=ref)
                    span["metered_vs_counter_rel"] = metered / ref - 1 if ref > 0 else None
                    level["metered_span"] = span
                stats = subprocess.run(
                    greenml_cli("llm", "stats", "--db", db, "--json"),
                    capture_output=True,
                    text=True,
                    cwd=REPO,
                    timeout=60,
                )
                if stats.returncode == 0:
                    s = json.loads(stats.stdout)
                    level["stats"] = s
                    attributed, idle = s.get("attributed_j"), s.get("idle_j")
                    if attributed is not None and idle is not None:
                        # Over the span the stored rows cover (else the proxy's whole life).
                        ref = (level.get("metered_span") or {}).get("counter_j")
                        ref = ref or level["counter_proxy_life_j"]
                        level["attributed_plus_idle_vs_counter_rel"] = (attributed + idle) / ref - 1
                        level["attributed_vs_counter_load_span_rel"] = attributed / span_j - 1
                else:
                    level["stats_error"] = stats.stderr.strip()[-500:]
            part.figures[f"streams_{streams}"] = level
            part.checkpoint()
            s = level.get("stats") or {}
            rows.append(
                [
                    streams,
                    f"{len(ok)}/{requests}",
                    in_tok,
                    out_tok,
                    t1 - t0,
                    out_tok / (t1 - t0),
                    span_j,
                    level["counter_j_per_output_token"],
                    s.get("j_per_prompt_token"),
                    s.get("j_per_output_token"),
                    s.get("attributed_j"),
                    s.get("idle_j"),
                    pct(closure(level)),
                ]
            )
            print(json.dumps({k: v for k, v in level.items() if k != "stats"}, default=str)[:1500])
        part.table(
            "LLM serving energy (" + str(part.figures["engine"]) + ")",
            [
                "streams",
                "ok",
                "prompt tok",
                "output tok",
                "span s",
                "out tok/s",
                "counter J",
                "J/out tok (counter, all)",
                "J/prompt tok (proxy)",
                "J/out tok (proxy)",
                "attributed J",
                "idle J",
                "(attr+idle)/counter − 1",
            ],
            rows,
        )
        if not rows:
            status = "failed"
    finally:
        run.close()
        counter.stop.set()
        part.checkpoint()  # kept if SIGTERM ends the part here; the finish below replaces it
    part.finish(status)


if __name__ == "__main__":
    main()

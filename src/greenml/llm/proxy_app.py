"""The energy-aware OpenAI-compatible proxy: a plain ASGI app over an httpx client.

``/v1/chat/completions``, ``/v1/completions`` and ``/v1/embeddings`` are
measured: each request enters the :class:`~greenml.llm.inflight.Ledger`, its
streamed chunks are noted as they pass, and the response gets
``usage.energy`` (non-streamed JSON; in a stream, the final usage chunk) and
``X-Greenml-Energy-J`` (non-streamed only: a stream's headers leave first).
Content is never changed: only the ``usage`` object gains ``energy``, and
every other byte of a stream is forwarded as it came. Anything else is passed
through untouched; ``/metrics`` serves Prometheus and ``/greenml/...`` the
settled figures.

The figure in a response is provisional (the intervals the request has seen,
shared by the work known then); the settled one is stored, served at
``/greenml/requests/{id}`` and counted in ``/metrics``. No request waits for
the meter: the proxy adds no settle latency.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from greenml.llm.asgi_io import (
    Receive,
    Scope,
    Send,
    error,
    event_data,
    event_end,
    forward_headers,
    header,
    query,
    read_body,
    respond,
    response_headers,
    send_all,
    too_large,
)
from greenml.llm.carbon import HourlyIntensity
from greenml.llm.engine_metrics import Unattributed, scrape_engine
from greenml.llm.inflight import (
    CANCELLED,
    COMPLETED,
    ERROR,
    UNAVAILABLE,
    EnergySource,
    Ledger,
    Request,
    Ticker,
    uncertainty_j,
)
from greenml.llm.metrics import ProxyMetrics
from greenml.llm.proxy_routes import NODES_PREFIX, node_report, status
from greenml.llm.records import idle_row, request_row
from greenml.llm.usage import estimate_prompt_tokens, generated_tokens, parse_json, read_usage

if TYPE_CHECKING:
    import httpx

    from greenml.llm.otlp import OtlpMetrics
    from greenml.llm.records import RecordWriter
    from greenml.llm.uplink import ServingUplink

log = logging.getLogger("greenml")

MEASURED = frozenset({"/v1/chat/completions", "/v1/completions", "/v1/embeddings"})
ENERGY_HEADER = b"x-greenml-energy-j"
SETTLED_KEPT = 10_000
KEEPALIVE_S = 2.0


@dataclass(frozen=True)
class ProxyConfig:
    """What ``greenml llm proxy`` was told.

    Attributes:
        upstream: The engine's base URL (``http://127.0.0.1:8000``).
        energy_in_response: Add ``usage.energy`` and the header.
        tenant_header: Header naming the tenant; default: a hash of the API key.
        max_body_bytes: Larger request bodies get 413 before the engine.
        sample_hz: Ticks (intervals) per second.
        engine_metrics: The engine's Prometheus URL, to find traffic that bypassed the proxy.
        node_token: The secret ``greenml llm node`` reports carry (multi-node engines).
    """

    upstream: str
    energy_in_response: bool = True
    tenant_header: str | None = None
    max_body_bytes: int = 16 * 1024 * 1024
    sample_hz: float = 10.0
    engine_metrics: str | None = None
    engine_metrics_every_s: float = 15.0
    node_token: str | None = None


class ProxyApp:
    """The ASGI app; ``startup``/``shutdown`` run from the ASGI lifespan (or by hand)."""

    def __init__(
        self,
        config: ProxyConfig,
        source: EnergySource,
        *,
        writer: RecordWriter | None = None,
        carbon: HourlyIntensity | None = None,
        uplink: ServingUplink | None = None,
        otlp: OtlpMetrics | None = None,
    ) -> None:
        self.config = config
        self.source = source
        self.writer = writer
        self.uplink = uplink
        self.otlp = otlp
        self.carbon = carbon or HourlyIntensity(None, "carbon unknown: no location set")
        self.metrics = ProxyMetrics()
        self.unattributed = Unattributed()
        self.settled: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.ledger = Ledger(source, on_settled=self._settled, on_idle=self._idle)
        self.ticker = Ticker(self.ledger, 1.0 / config.sample_hz)
        self.upstream = config.upstream.rstrip("/")
        self._client: httpx.AsyncClient | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False
        self.overheads_s: list[float] = []  # proxy-side time per measured request (last 100k)

    # ------------------------------------------------------------------ life

    async def startup(self) -> None:
        import httpx

        if self._started:
            return
        self._started = True
        # engines close idle connections after 5 s (uvicorn's default): let ours go first
        limits = httpx.Limits(max_connections=1000, max_keepalive_connections=200,
                              keepalive_expiry=KEEPALIVE_S)  # fmt: skip
        timeout = httpx.Timeout(connect=5.0, read=None, write=None, pool=None)
        self._client = httpx.AsyncClient(limits=limits, timeout=timeout)
        for name in ("accept-encoding", "user-agent", "accept"):
            self._client.headers.pop(name, None)  # only what the caller sent goes upstream
        self.ticker.start()
        if self.uplink is not None:
            self.uplink.start()
        c = self.config
        if c.engine_metrics:
            scrape = scrape_engine(self._client, c.engine_metrics, c.engine_metrics_every_s,
                                   self.unattributed)  # fmt: skip
            self._tasks.append(asyncio.ensure_future(scrape))

    async def shutdown(self) -> None:
        for task in self._tasks:
            task.cancel()
        self.ticker.stop()
        self.ledger.settle_all()
        if self._client is not None:
            await self._client.aclose()
        if self.writer is not None:
            self.writer.close()
        if self.uplink is not None:
            self.uplink.close()
        if self.otlp is not None:
            self.otlp.close()

    # ----------------------------------------------------------------- sinks

    def _settled(self, req: Request) -> None:
        row = request_row(
            req, self.ledger.wall_offset, self.source.uncertainty_rel, self.source.method,
            self.carbon,
        )  # fmt: skip
        self.metrics.settled(req)
        self.unattributed.seen_by_proxy(req.prompt_tokens, req.completion_tokens)
        self.settled[req.id] = row
        while len(self.settled) > SETTLED_KEPT:
            self.settled.popitem(last=False)
        if self.writer is not None:
            self.writer.add(row)
        if self.uplink is not None:
            self.uplink.rollup.add_request(row)
        if self.otlp is not None:
            self.otlp.settled(row)

    def _idle(self, start_s: float, end_s: float, energy_j: float) -> None:
        self.metrics.idle_energy(energy_j)
        if self.writer is not None:
            self.writer.add_idle(idle_row(start_s, end_s, energy_j, self.source.method))
        if self.uplink is not None:
            self.uplink.rollup.add_idle(end_s, energy_j, self.carbon.co2eq_g(energy_j, end_s)[0])
        if self.otlp is not None:
            self.otlp.idle(energy_j)

    # ------------------------------------------------------------------ ASGI

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind != "http":
            return
        if not self._started:
            await self.startup()
        path = scope["path"]
        if path == "/metrics" and scope["method"] == "GET":
            self._refresh_gauges()
            await respond(send, 200, self.metrics.render(), b"text/plain; version=0.0.4")
        elif path.startswith(NODES_PREFIX) and scope["method"] == "POST":
            await node_report(self, scope, receive, send)
        elif path.startswith("/greenml/"):
            await status(self, path, send)
        elif path in MEASURED and scope["method"] == "POST":
            await self._measured(scope, receive, send)
        else:
            await self._passthrough(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self.startup()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _refresh_gauges(self) -> None:
        self.metrics.in_flight.set(self.ledger.in_flight)
        for kind, share in self.unattributed.shares().items():
            if share is not None:
                self.metrics.unattributed.labels(kind).set(share)

    # ------------------------------------------------------------ measured

    async def _measured(self, scope: Scope, receive: Receive, send: Send) -> None:
        t0 = time.perf_counter()
        waited = 0.0
        limit = self.config.max_body_bytes
        declared = header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await too_large(send, limit)
            return
        body = await read_body(receive, limit)
        if body is None:
            await too_large(send, limit)
            return
        doc = parse_json(body)
        if not isinstance(doc, dict):  # the engine answers what it makes of it
            await self._forward(scope, body, send)
            return
        stream = bool(doc.get("stream"))
        client_wants_usage = True
        if stream:
            options = doc.get("stream_options")
            client_wants_usage = isinstance(options, dict) and bool(options.get("include_usage"))
            if not client_wants_usage:
                doc["stream_options"] = {**(options or {}), "include_usage": True}
                body = json.dumps(doc).encode()
        model = doc.get("model") if isinstance(doc.get("model"), str) else None
        req = self.ledger.begin(
            scope["path"], model, self._tenant(scope), stream, estimate_prompt_tokens(doc)
        )
        assert self._client is not None
        request = self._client.build_request(
            "POST", self.upstream + scope["path"] + query(scope), content=body,
            headers=forward_headers(scope, identity=True),
        )  # fmt: skip
        w0 = time.perf_counter()
        try:
            upstream = await self._send_upstream(request)
        except Exception as exc:  # engine down: one line, the time counts as idle
            self.ledger.discard(req)
            self.metrics.upstream_errors.inc()
            message = f"greenml proxy: engine at {self.upstream} unreachable ({type(exc).__name__})"
            await respond(send, 502, error(message, "upstream_unavailable"))
            return
        waited += time.perf_counter() - w0
        try:
            ctype = upstream.headers.get("content-type", "")
            if stream and upstream.status_code == 200 and "text/event-stream" in ctype:
                waited += await self._stream(req, upstream, receive, send, client_wants_usage)
            else:
                w0 = time.perf_counter()
                raw = await upstream.aread()
                waited += time.perf_counter() - w0
                await self._json(req, upstream, raw, send)
        finally:
            await upstream.aclose()
        self._overhead(time.perf_counter() - t0 - waited)

    async def _send_upstream(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; once more when the engine closed a kept-alive connection as it
        was being reused (it never read the request: nothing was generated twice)."""
        import httpx

        assert self._client is not None
        try:
            return await self._client.send(request, stream=True)
        except (httpx.RemoteProtocolError, httpx.WriteError) as exc:
            log.debug("greenml: engine closed a kept-alive connection (%r); sent again", exc)
            return await self._client.send(request, stream=True)

    def _overhead(self, seconds: float) -> None:
        self.metrics.overhead.observe(seconds)
        if len(self.overheads_s) < 100_000:
            self.overheads_s.append(seconds)

    async def _json(self, req: Request, upstream: httpx.Response, raw: bytes, send: Send) -> None:
        doc = parse_json(raw) if upstream.status_code == 200 else None
        headers = response_headers(upstream, keep_length=False)
        if not isinstance(doc, dict):  # not JSON (or an engine error): untouched, no figure
            status = UNAVAILABLE if upstream.status_code == 200 else ERROR
            self.ledger.finish(req, status)
            headers.append((ENERGY_HEADER, b"unavailable"))
            await send_all(send, upstream.status_code, headers, raw)
            return
        usage = read_usage(doc)
        if usage is not None:
            req.prompt_tokens, req.completion_tokens = usage.prompt_tokens, usage.completion_tokens
            req.token_source = "usage"
        self.ledger.finish(req, COMPLETED)
        if self.config.energy_in_response:
            energy = self._energy(req)
            if isinstance(doc.get("usage"), dict):
                doc["usage"]["energy"] = energy
            else:
                doc["usage"] = {"energy": energy}
            raw = json.dumps(doc, ensure_ascii=False).encode()
            headers.append((ENERGY_HEADER, f"{energy['energy_j']:.6g}".encode()))
        await send_all(send, 200, headers, raw)

    async def _stream(
        self,
        req: Request,
        upstream: httpx.Response,
        receive: Receive,
        send: Send,
        client_wants_usage: bool,
    ) -> float:
        """Forward an SSE stream event by event; returns the seconds spent waiting upstream."""
        waited = [0.0]
        await send({
            "type": "http.response.start", "status": 200,
            "headers": response_headers(upstream, keep_length=False),
        })  # fmt: skip

        async def pump() -> None:
            buffer = b""
            chunks = upstream.aiter_raw()
            while True:
                w0 = time.perf_counter()
                try:
                    raw = await chunks.__anext__()
                except StopAsyncIteration:
                    waited[0] += time.perf_counter() - w0
                    break
                waited[0] += time.perf_counter() - w0
                buffer += raw
                out: list[bytes] = []
                while True:
                    cut = event_end(buffer)
                    if cut < 0:
                        break
                    event, buffer = buffer[:cut], buffer[cut:]
                    forwarded = self._event(req, event, client_wants_usage)
                    if forwarded:
                        out.append(forwarded)
                if out:
                    await send({"type": "http.response.body", "body": b"".join(out),
                                "more_body": True})  # fmt: skip
            if buffer:
                await send({"type": "http.response.body", "body": buffer, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})

        async def disconnected() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        pumping = asyncio.ensure_future(pump())
        watching = asyncio.ensure_future(disconnected())
        await asyncio.wait({pumping, watching}, return_when=asyncio.FIRST_COMPLETED)
        if pumping.done() and pumping.exception() is None:
            watching.cancel()
            self.ledger.finish(req, COMPLETED)  # no usage chunk: counted (finish says so)
            return waited[0]
        pumping.cancel()
        watching.cancel()
        self.ledger.finish(req, CANCELLED)  # the client left, or the engine broke off
        return waited[0]

    def _event(self, req: Request, event: bytes, client_wants_usage: bool) -> bytes | None:
        """One SSE event: noted, and forwarded as it came unless it is the usage chunk."""
        data = event_data(event)
        if data is None or data == b"[DONE]":
            return event
        doc = parse_json(data)
        now = self.ledger.clock()
        req.note_chunk(now, generated_tokens(doc))
        usage = read_usage(doc)
        if usage is None or not isinstance(doc, dict):
            return event
        req.prompt_tokens, req.completion_tokens = usage.prompt_tokens, usage.completion_tokens
        req.token_source = "usage"
        self.ledger.finish(req, COMPLETED)
        if not client_wants_usage and not doc.get("choices"):
            return None  # a chunk the client did not ask for
        if not self.config.energy_in_response:
            return event
        doc["usage"]["energy"] = self._energy(req)
        return b"data: " + json.dumps(doc, ensure_ascii=False).encode() + b"\n\n"

    def _energy(self, req: Request) -> dict[str, Any]:
        """The provisional ``usage.energy`` of a request that just ended."""
        energy = req.response_j or 0.0
        prefill = min(energy, req.response_prefill_j)
        ratio = self.ledger.ratio.current()
        tail = energy - req.provisional_j
        spread_rel = ratio.spread / ratio.estimate if ratio.estimate else 1.0
        unc = math.hypot(energy * self.source.uncertainty_rel, tail, prefill * spread_rel)
        co2, _ = self.carbon.co2eq_g(energy, time.time())
        return {
            "energy_j": energy,
            "uncertainty_j": unc,
            "prefill_j": prefill,
            "decode_j": energy - prefill,
            "static_j": min(energy, req.response_static_j),
            "dynamic_j": max(0.0, energy - req.response_static_j),
            "idle_floor_w": self.ledger.floor.floor_w,
            "co2eq_g": co2,
            "method": self.source.method,
            "status": "provisional",
            "request_id": req.id,
        }

    # --------------------------------------------------------- pass-through

    async def _passthrough(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def body() -> AsyncIterator[bytes]:
            more = True
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                yield message.get("body", b"")
                more = message.get("more_body", False)

        await self._forward(scope, body(), send)

    async def _forward(self, scope: Scope, content: Any, send: Send) -> None:
        assert self._client is not None
        request = self._client.build_request(
            scope["method"], self.upstream + scope["path"] + query(scope), content=content,
            headers=forward_headers(scope, identity=False),
        )  # fmt: skip
        try:
            upstream = await self._client.send(request, stream=True)
        except Exception as exc:
            self.metrics.upstream_errors.inc()
            message = f"greenml proxy: engine at {self.upstream} unreachable ({type(exc).__name__})"
            await respond(send, 502, error(message, "upstream_unavailable"))
            return
        try:
            await send({
                "type": "http.response.start", "status": upstream.status_code,
                "headers": response_headers(upstream, keep_length=True),
            })  # fmt: skip
            async for raw in upstream.aiter_raw():
                await send({"type": "http.response.body", "body": raw, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await upstream.aclose()

    def _tenant(self, scope: Scope) -> str | None:
        name = self.config.tenant_header
        if name:
            value = header(scope, name.lower().encode())
            return value[:128] if value else None
        auth = header(scope, b"authorization")
        if not auth:
            return None
        key = auth.split(" ", 1)[-1].strip()
        return "key:" + hashlib.sha256(key.encode()).hexdigest()[:12]



__all__ = ["ProxyApp", "ProxyConfig", "uncertainty_j"]

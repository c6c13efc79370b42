"""The proxy's ``/metrics``: settled energy by model, tenant and phase; J/token histograms.

Counters grow when a request settles (its figure is final), so a scrape never
counts a provisional joule. Idle energy has its own counter; together with the
attributed counters it adds up to what the meter measured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from greenml.llm.inflight import Request

J_PER_TOKEN_BUCKETS = (
    1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0,
)  # fmt: skip
OVERHEAD_BUCKETS = (5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 0.01, 0.05)


class ProxyMetrics:
    """Prometheus collectors of one proxy, in their own registry."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry()
        r = self.registry
        self.energy = Counter(
            "greenml_llm_energy_joules", "Energy attributed to requests (settled)",
            ["model", "tenant", "phase"], registry=r,
        )  # fmt: skip
        self.idle = Counter(
            "greenml_llm_idle_energy_joules", "Energy drawn with no request in flight", registry=r
        )
        self.requests = Counter(
            "greenml_llm_requests", "Requests settled", ["model", "tenant", "status"], registry=r
        )
        self.tokens = Counter(
            "greenml_llm_tokens", "Tokens of settled requests", ["model", "tenant", "kind"],
            registry=r,
        )  # fmt: skip
        self.j_per_token = Histogram(
            "greenml_llm_joules_per_token", "Energy per token of each request",
            ["model", "kind"], buckets=J_PER_TOKEN_BUCKETS, registry=r,
        )  # fmt: skip
        self.overhead = Histogram(
            "greenml_llm_proxy_overhead_seconds",
            "Time spent in the proxy's own code per request (upstream waits excluded)",
            buckets=OVERHEAD_BUCKETS, registry=r,
        )  # fmt: skip
        self.upstream_errors = Counter(
            "greenml_llm_upstream_errors", "Requests answered 502: engine unreachable", registry=r
        )
        self.in_flight = Gauge("greenml_llm_requests_in_flight", "Requests in flight", registry=r)
        self.ratio = Gauge(
            "greenml_llm_prefill_decode_ratio", "Estimated prefill/decode cost per token",
            ["stat"], registry=r,
        )  # fmt: skip
        self.unattributed = Gauge(
            "greenml_llm_engine_unattributed_token_share",
            "Share of the engine's tokens that did not pass through the proxy",
            ["kind"], registry=r,
        )  # fmt: skip

    def settled(self, req: Request) -> None:
        model, tenant = req.model or "", req.tenant or ""
        self.energy.labels(model, tenant, "prefill").inc(max(0.0, req.prefill_j))
        self.energy.labels(model, tenant, "decode").inc(max(0.0, req.decode_j))
        self.energy.labels(model, tenant, "queued").inc(max(0.0, req.queued_j))
        self.requests.labels(model, tenant, req.status).inc()
        if req.prompt_tokens:
            self.tokens.labels(model, tenant, "prompt").inc(req.prompt_tokens)
            self.j_per_token.labels(model, "prompt").observe(req.prefill_j / req.prompt_tokens)
        if req.completion_tokens:
            self.tokens.labels(model, tenant, "output").inc(req.completion_tokens)
            self.j_per_token.labels(model, "output").observe(req.decode_j / req.completion_tokens)
        self.ratio.labels("estimate").set(req.ratio)
        self.ratio.labels("spread").set(req.ratio_spread)

    def idle_energy(self, energy_j: float) -> None:
        if energy_j > 0:
            self.idle.inc(energy_j)

    def render(self) -> bytes:
        from prometheus_client import generate_latest

        return generate_latest(self.registry)

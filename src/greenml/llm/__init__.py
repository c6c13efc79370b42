"""Energy of LLM serving and LLM calls.

Two halves: an energy-aware OpenAI-compatible proxy that measures energy per request and
token on the engine's node (``greenml llm proxy``), and the instrumentation of remote-API
clients and agent workflows (``greenml.llm.remote``), measured where a greenml proxy
answered and estimated otherwise.

Public names load lazily (``import greenml.llm`` stays cheap)::

    from greenml.llm import ProxyApp, ProxyConfig, split_interval, compute_stats
    from greenml.llm import instrument, Workflow, tool, GreenmlSpanProcessor, estimate
"""

from __future__ import annotations

from greenml.lazy import lazy_exports

_EXPORTS = {
    "ProxyApp": "greenml.llm.proxy_app",
    "ProxyConfig": "greenml.llm.proxy_app",
    "Ledger": "greenml.llm.inflight",
    "split_interval": "greenml.llm.attribution",
    "RatioEstimator": "greenml.llm.ratio",
    "compute_stats": "greenml.llm.stats",
    "instrument": "greenml.llm.remote",
    "Workflow": "greenml.llm.remote",
    "tool": "greenml.llm.remote",
    "GreenmlSpanProcessor": "greenml.llm.remote",
    "estimate": "greenml.llm.remote",
    "LlmCall": "greenml.llm.remote",
}

__all__ = [
    "GreenmlSpanProcessor",
    "Ledger",
    "LlmCall",
    "ProxyApp",
    "ProxyConfig",
    "RatioEstimator",
    "Workflow",
    "compute_stats",
    "estimate",
    "instrument",
    "split_interval",
    "tool",
]


__getattr__ = lazy_exports(__name__, _EXPORTS)

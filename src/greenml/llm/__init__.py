"""Energy of LLM serving: an energy-aware OpenAI-compatible proxy, per request and token.

Public names load lazily (``import greenml.llm`` stays cheap)::

    from greenml.llm import ProxyApp, ProxyConfig, split_interval, compute_stats
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ProxyApp": "greenml.llm.proxy_app",
    "ProxyConfig": "greenml.llm.proxy_app",
    "Ledger": "greenml.llm.inflight",
    "split_interval": "greenml.llm.attribution",
    "RatioEstimator": "greenml.llm.ratio",
    "compute_stats": "greenml.llm.stats",
}

__all__ = [
    "Ledger",
    "ProxyApp",
    "ProxyConfig",
    "RatioEstimator",
    "compute_stats",
    "split_interval",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'greenml.llm' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

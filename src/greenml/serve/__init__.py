"""Serving: energy per request, response and semantic caches, dynamic batching.

Imported lazily (numpy, redis and torch only load when used)::

    from greenml.serve import RequestMeter, EnergyMiddleware
    rm = RequestMeter()                        # opens a Meter, samples at 10 Hz
    app.add_middleware(EnergyMiddleware, request_meter=rm)
    print(rm.report().to_dict())               # J per request per route, idle apart
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

_LAZY = {
    "Attribution": "greenml.serve.attribution",
    "attribute_energy": "greenml.serve.attribution",
    "RequestMeter": "greenml.serve.requests",
    "ServingReport": "greenml.serve.requests",
    "RouteEnergy": "greenml.serve.requests",
    "SettledRequest": "greenml.serve.requests",
    "EnergyMiddleware": "greenml.serve.middleware",
    "measure_request": "greenml.serve.decorator",
    "RequestMetrics": "greenml.serve.metrics",
    "export_request_metrics": "greenml.serve.metrics",
    "CacheMetrics": "greenml.serve.metrics",
    "export_cache_metrics": "greenml.serve.metrics",
    "CacheUnavailable": "greenml.errors",
    "cache_key": "greenml.serve.cache.keys",
    "JsonCodec": "greenml.serve.codec",
    "BytesCodec": "greenml.serve.codec",
    "MemoryBackend": "greenml.serve.cache.memory",
    "RedisBackend": "greenml.serve.cache.redis",
    "CacheStats": "greenml.serve.cache.stats",
    "Hit": "greenml.serve.cache.response",
    "ResponseCache": "greenml.serve.cache.response",
    "SemanticCache": "greenml.serve.cache.semantic",
    "ExactIndex": "greenml.serve.vector_index",
    "FaissIndex": "greenml.serve.faiss_index",
    "MiniLMEmbedder": "greenml.serve.embeddings",
    "HashingEmbedder": "greenml.serve.embeddings",
    "DynamicBatcher": "greenml.serve.batching",
    "BatchCurve": "greenml.serve.batch_curve",
    "batch_curve": "greenml.serve.batch_curve",
    "measure_batch_curve": "greenml.serve.batch_curve",
    "recommend_batch": "greenml.serve.batch_curve",
}

__all__ = [
    "Attribution",
    "BatchCurve",
    "BytesCodec",
    "CacheMetrics",
    "CacheStats",
    "CacheUnavailable",
    "DynamicBatcher",
    "EnergyMiddleware",
    "ExactIndex",
    "FaissIndex",
    "HashingEmbedder",
    "Hit",
    "JsonCodec",
    "MemoryBackend",
    "MiniLMEmbedder",
    "RedisBackend",
    "RequestMeter",
    "RequestMetrics",
    "ResponseCache",
    "RouteEnergy",
    "SemanticCache",
    "ServingReport",
    "SettledRequest",
    "attribute_energy",
    "batch_curve",
    "cache_key",
    "export_cache_metrics",
    "export_request_metrics",
    "measure_batch_curve",
    "measure_request",
    "recommend_batch",
]

if TYPE_CHECKING:
    from greenml.errors import CacheUnavailable
    from greenml.serve.attribution import Attribution, attribute_energy
    from greenml.serve.batch_curve import (
        BatchCurve,
        batch_curve,
        measure_batch_curve,
        recommend_batch,
    )
    from greenml.serve.batching import DynamicBatcher
    from greenml.serve.cache.keys import cache_key
    from greenml.serve.cache.memory import MemoryBackend
    from greenml.serve.cache.redis import RedisBackend
    from greenml.serve.cache.response import Hit, ResponseCache
    from greenml.serve.cache.semantic import SemanticCache
    from greenml.serve.cache.stats import CacheStats
    from greenml.serve.codec import BytesCodec, JsonCodec
    from greenml.serve.decorator import measure_request
    from greenml.serve.embeddings import HashingEmbedder, MiniLMEmbedder
    from greenml.serve.faiss_index import FaissIndex
    from greenml.serve.metrics import (
        CacheMetrics,
        RequestMetrics,
        export_cache_metrics,
        export_request_metrics,
    )
    from greenml.serve.middleware import EnergyMiddleware
    from greenml.serve.requests import RequestMeter, RouteEnergy, ServingReport, SettledRequest
    from greenml.serve.vector_index import ExactIndex


__getattr__ = lazy_exports(__name__, _LAZY)

"""SemanticCache: the threshold, scoping by model, bounds, Redis sharing, refused values."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from greenml.errors import ConfigError
from greenml.serve.cache.memory import MemoryBackend
from greenml.serve.cache.redis import RedisBackend
from greenml.serve.cache.semantic import SemanticCache
from greenml.serve.embeddings import HashingEmbedder
from tests.helpers import ManualClock


class TableEmbedder:
    """Vectors chosen by the test: cos(base, "near X") = X."""

    dim = 16

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            if text.startswith("near "):
                c = float(text.split()[1])
                out[i, 0], out[i, 1] = c, np.sqrt(1 - c * c)
            elif text == "base":
                out[i, 0] = 1.0
            else:
                # crc32, not hash(): str hashes change with PYTHONHASHSEED per process.
                out[i, 2 + zlib.crc32(text.encode()) % (self.dim - 2)] = 1.0
        return out


def test_threshold_is_inclusive_and_configurable() -> None:
    cache = SemanticCache(TableEmbedder(), threshold=0.95)
    cache.put("base", "cached answer")
    hit = cache.get("near 0.96")
    assert hit is not None and hit.value == "cached answer"
    assert hit.score == pytest.approx(0.96, abs=1e-6)
    assert cache.get("near 0.94") is None
    strict = SemanticCache(TableEmbedder(), threshold=0.97)
    strict.put("base", "cached answer")
    assert strict.get("near 0.96") is None
    assert strict.get("near 0.98") is not None
    with pytest.raises(ConfigError, match="threshold"):
        SemanticCache(TableEmbedder(), threshold=1.5)


def test_scoped_by_model_and_parameters() -> None:
    cache = SemanticCache(HashingEmbedder())
    cache.put("How do I reset my password?", "Settings → Security", model="a", params={"t": 0})
    assert cache.get("how do I reset my  password?", model="a", params={"t": 0.0}) is not None
    assert cache.get("How do I reset my password?", model="b", params={"t": 0}) is None
    assert cache.get("How do I reset my password?", model="a", params={"t": 1}) is None
    assert cache.get("What is the weather in Paris?", model="a", params={"t": 0}) is None
    stats = cache.stats()
    assert (stats.hits, stats.misses) == (1, 3)


def test_lru_bound_and_ttl_drop_vectors_too() -> None:
    clock = ManualClock()
    backend = MemoryBackend(max_entries=2, ttl_s=10.0, clock=clock)
    cache = SemanticCache(HashingEmbedder(), backend=backend)
    cache.put("first question about dogs", 1)
    cache.put("second question about cats", 2)
    assert cache.get("first question about dogs") is not None  # first is now recent
    cache.put("third question about birds", 3)  # evicts the second
    assert len(cache) == 2 and len(backend) == 2
    assert cache.get("second question about cats") is None
    clock.advance(11.0)
    assert cache.get("first question about dogs") is None  # expired: the vector goes too
    assert len(cache) == 1


def test_unserializable_value_writes_nothing() -> None:
    backend = MemoryBackend()
    embed = TableEmbedder()
    cache = SemanticCache(embed, backend=backend)
    with pytest.raises(ConfigError, match="cannot be stored as JSON"):
        cache.put("base", {"handle": object()})
    assert len(cache) == 0 and len(backend) == 0
    assert embed.calls == 0  # refused before any work


def test_energy_credit_and_embedding_memo() -> None:
    embed = TableEmbedder()
    cache = SemanticCache(embed, price_usd_per_kwh=0.2, flush_every_s=0)
    calls: list[str] = []

    def answer(prompt: str) -> str:
        calls.append(prompt)
        return "42"

    wrapped = cache.cached(answer)
    assert wrapped("base") == "42"
    cache.record_miss_energy(36.0, 0.1)
    assert wrapped("near 0.99") == "42"
    assert calls == ["base"]
    assert embed.calls == 2  # the miss embedded "base" once for both lookup and put
    stats = cache.stats()
    assert stats.energy_saved_j == pytest.approx(36.0)
    assert stats.usd_saved == pytest.approx(36.0 / 3.6e6 * 0.2)


def test_a_second_process_sees_entries_through_redis(redis_url: str, namespace: str) -> None:
    first_backend = RedisBackend(redis_url, namespace=namespace)
    second_backend = RedisBackend(redis_url, namespace=namespace)  # its own connection
    try:
        first = SemanticCache(HashingEmbedder(), backend=first_backend)
        second = SemanticCache(HashingEmbedder(), backend=second_backend, sync_every_s=0)
        assert second.get("Translate 'good morning' into German") is None
        first.put("Translate 'good morning' into German", {"text": "Guten Morgen"})
        hit = second.get("translate 'good morning' into german")
        assert hit is not None and hit.value == {"text": "Guten Morgen"}
        assert len(second) == 1  # the vector came from Redis
        first_backend.delete(hit.key)  # gone from Redis: the second process drops its vector
        assert second.get("Translate 'good morning' into German") is None
        assert len(second) == 0
    finally:
        first_backend.clear()
        first_backend.close()
        second_backend.close()


def test_faiss_index_option() -> None:
    cache = SemanticCache(HashingEmbedder(), index="faiss")
    cache.put("what is the boiling point of water", "100 °C")
    hit = cache.get("What is the boiling point of water?")
    assert hit is not None and hit.value == "100 °C"
    with pytest.raises(ConfigError, match="index must be"):
        SemanticCache(HashingEmbedder(), index="annoy")


def test_default_embedder_is_minilm_loaded_lazily() -> None:
    cache = SemanticCache()
    assert type(cache.embed).__name__ == "MiniLMEmbedder"
    assert cache.embed._model is None  # type: ignore[attr-defined]  # nothing loaded until the first lookup


def test_embedder_protocol(tmp_path: Any) -> None:
    vectors = HashingEmbedder(dim=64)(["a b c", "a b c", "", "zzz"])
    assert vectors.shape == (4, 64) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert vectors[0] @ vectors[1] == pytest.approx(1.0)


def test_put_many_warms_the_cache_with_one_embedding_call() -> None:
    embed = TableEmbedder()
    cache = SemanticCache(embed, backend=MemoryBackend(max_entries=2))
    keys = cache.put_many(["base", "other one", "third"], ["b", "o", "t"], model="m")
    assert len(keys) == 3 and embed.calls == 3
    assert len(cache) == 2  # the bound evicted the first, and its vector
    assert cache.get("near 0.99", model="m") is None
    assert cache.get("third", model="m").value == "t"  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="2 prompts but 1 values"):
        cache.put_many(["a", "b"], ["x"])
    with pytest.raises(ConfigError, match="JSON"):
        cache.put_many(["a", "b"], ["x", object()])
    assert len(cache) == 2

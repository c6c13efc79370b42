"""SemanticCache: answer a request whose prompt *means* the same as a cached one.

A prompt is embedded (:mod:`greenml.serve.embeddings`, MiniLM offline by
default) and compared, by cosine similarity, with the cached prompts of the
same model and parameters; the closest one at or above ``threshold`` (0.95 by
default) is a hit. Vectors are searched in this process
(:mod:`greenml.serve.vector_index`: exact NumPy search, or FAISS HNSW beyond
~100k entries); values, TTL and the LRU bound live in the backend. With Redis
the vectors are stored next to the values, and every process picks up what
the others added (:meth:`SemanticCache.sync`, at most every ``sync_every_s``).
Energy accounting is the response cache's: each hit is credited with the
measured mean energy of a miss.

Lazy imports: numpy and the embedder (torch, MiniLM) on first use.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from greenml.errors import CacheUnavailable
from greenml.serve.backend import CacheBackend
from greenml.serve.cache.keys import canonical_json, normalize_prompt, normalize_text, scope_key
from greenml.serve.cache.response import AccountedCache, CacheAccounting, Hit
from greenml.serve.codec import Codec, JsonCodec
from greenml.serve.indexes import make_index
from greenml.serve.requests import RequestMeter
from greenml.serve.vector_index import VectorIndex, check_threshold

if TYPE_CHECKING:
    from greenml.serve.embeddings import Embedder, Vectors

_MEMO = 64  # recent prompt embeddings kept (a miss embeds at get, then again at put)


class SemanticCache(AccountedCache):
    """Cache of answers keyed by prompt meaning, within one model and parameter set.

    Args:
        embed: The embedder (default: MiniLM, loaded on first use).
        threshold: Cosine similarity at or above which a cached prompt matches.
        backend: Where values live (default: an in-memory LRU of 100,000).
        index: ``exact`` (NumPy) or ``faiss`` (HNSW, approximate).
        request_meter: Measures the misses :meth:`cached` computes.
        name: Prefix of the cache's routes (``NAME:miss``, ``NAME:hit``, ``NAME:error``,
            ``NAME:bypass`` while the store is down).
        price_usd_per_kwh: Electricity price for the USD saved.
        ttl_s: Time to live of entries put here (default: the backend's).
        codec: Value serialization (default JSON); checked before any write.
        sync_every_s: With a shared backend, how often a lookup first fetches
            the vectors other processes added (0: at every lookup).
        flush_every_s: How often local counts go to the backend's counters.
    """

    def __init__(
        self,
        embed: Embedder | None = None,
        *,
        threshold: float = 0.95,
        backend: CacheBackend | None = None,
        index: str = "exact",
        request_meter: RequestMeter | None = None,
        name: str = "semantic-cache",
        price_usd_per_kwh: float | None = None,
        ttl_s: float | None = None,
        codec: Codec | None = None,
        sync_every_s: float = 1.0,
        flush_every_s: float = 1.0,
    ) -> None:
        if embed is None:
            from greenml.serve.embeddings import MiniLMEmbedder

            embed = MiniLMEmbedder()
        if backend is None:
            from greenml.serve.cache.memory import MemoryBackend

            backend = MemoryBackend()
        self.embed = embed
        self.threshold = check_threshold(threshold)
        self.backend = backend
        self.codec: Codec = codec or JsonCodec()
        self.ttl_s = ttl_s
        self._kind = index
        make_index(index, 8)  # a bad kind fails here, not at the first put
        self._indexes: dict[str, VectorIndex] = {}
        self._lock = threading.Lock()
        self._memo: OrderedDict[str, Vectors] = OrderedDict()
        self._cursor = 0
        self._sync_every = sync_every_s
        self._synced_at = -float("inf")
        self.accounting = CacheAccounting(
            backend, name, request_meter, price_usd_per_kwh, flush_every_s
        )

    def __len__(self) -> int:
        with self._lock:
            return sum(len(index) for index in self._indexes.values())

    # ------------------------------------------------------------ lookups

    def _key(self, prompt: Any, model: str, params: Mapping[str, Any] | None) -> str:
        text = _text(prompt)
        return f"{scope_key(model, params)}:{hashlib.sha256(text.encode()).hexdigest()[:32]}"

    def _lookup(self, prompt: Any, model: str, params: Mapping[str, Any] | None) -> Hit | None:
        """The answer cached for the closest prompt at or above the threshold, or ``None``."""
        if self.backend.shared and time.monotonic() - self._synced_at >= self._sync_every:
            self._sync()
        scope = scope_key(model, params)
        text = _text(prompt)
        vector = self._embed(text)
        recorder = self.accounting.recorder
        with self._lock:
            index = self._indexes.get(scope)
            found = index.search(vector, self.threshold) if index is not None else None
        if found is None:
            recorder.miss()
            return None
        key, score = found
        data = self.backend.get(key)
        if data is None:  # expired, or evicted by another process
            with self._lock:
                self._forget([key])
            recorder.miss()
            return None
        recorder.hit()
        return Hit(self.codec.decode(data), key, score)

    def _store(
        self,
        key: str,
        prompt: Any,
        value: Any,
        model: str,
        params: Mapping[str, Any] | None,
        ttl_s: float | None,
    ) -> None:
        import numpy as np

        data = self.codec.encode(value)  # before any write
        vector = np.asarray(self._embed(_text(prompt)), dtype=np.float32)
        shared = vector.tobytes() if self.backend.shared else None
        evicted = self.backend.put(key, data, ttl_s if ttl_s is not None else self.ttl_s, shared)
        with self._lock:
            self._index(key.split(":", 1)[0], vector.shape[0]).add(key, vector)
            self._forget(evicted)

    def put_many(
        self,
        prompts: Sequence[Any],
        values: Sequence[Any],
        *,
        model: str = "",
        params: Mapping[str, Any] | None = None,
        ttl_s: float | None = None,
    ) -> list[str]:
        """Warm the cache: one embedding call for every prompt, then one put each.

        While the store is down, only the entries written before it failed are
        indexed (and their keys returned).

        Raises:
            ConfigError: A value cannot be encoded, or the lengths differ (nothing written).
        """
        import numpy as np

        from greenml.errors import ConfigError

        if len(prompts) != len(values):
            raise ConfigError(f"{len(prompts)} prompts but {len(values)} values")
        encoded = [self.codec.encode(v) for v in values]  # all checked before any write
        scope = scope_key(model, params)
        texts = [_text(p) for p in prompts]
        vectors = np.asarray(self.embed(texts), dtype=np.float32)
        keys = [f"{scope}:{hashlib.sha256(t.encode()).hexdigest()[:32]}" for t in texts]
        ttl = ttl_s if ttl_s is not None else self.ttl_s
        evicted: list[str] = []
        written = 0
        for key, data, vector in zip(keys, encoded, vectors, strict=True):
            shared = vector.tobytes() if self.backend.shared else None
            try:
                evicted += self.backend.put(key, data, ttl, shared)
            except CacheUnavailable:
                break  # fail open: the rest is not written
            written += 1
        with self._lock:
            if written:
                self._index(scope, vectors.shape[1]).add_many(keys[:written], vectors[:written])
            self._forget(evicted)
        return keys[:written]

    # ------------------------------------------------------------ plumbing

    def sync(self) -> int:
        """Index the vectors other processes stored since the last sync; how many (0 if down)."""
        try:
            return self._sync()
        except CacheUnavailable:
            return 0

    def _sync(self) -> int:
        import numpy as np

        cursor, rows = self.backend.vectors_since(self._cursor)
        self._synced_at = time.monotonic()
        if not rows:
            return 0
        by_scope: dict[str, list[tuple[str, bytes]]] = {}
        for key, raw in rows:
            by_scope.setdefault(key.split(":", 1)[0], []).append((key, raw))
        with self._lock:
            for scope, items in by_scope.items():
                vectors = np.stack([np.frombuffer(raw, dtype=np.float32) for _, raw in items])
                index = self._index(scope, vectors.shape[1])
                index.add_many([key for key, _ in items], vectors)
            self._cursor = max(self._cursor, cursor)
        return len(rows)

    def _index(self, scope: str, dim: int) -> VectorIndex:
        index = self._indexes.get(scope)
        if index is None:
            index = self._indexes[scope] = make_index(self._kind, dim)
        return index

    def _forget(self, keys: list[str]) -> None:
        for key in keys:
            index = self._indexes.get(key.split(":", 1)[0])
            if index is not None:
                index.remove(key)

    def _embed(self, text: str) -> Vectors:
        with self._lock:
            memo = self._memo.get(text)
            if memo is not None:
                self._memo.move_to_end(text)
                return memo
        vector: Vectors = self.embed([text])[0]
        with self._lock:
            self._memo[text] = vector
            while len(self._memo) > _MEMO:
                self._memo.popitem(last=False)
        return vector


def _text(prompt: Any) -> str:
    """The normalized text a prompt is embedded from (chat messages as canonical JSON)."""
    if isinstance(prompt, str):
        return normalize_text(prompt)
    return canonical_json(normalize_prompt(prompt))

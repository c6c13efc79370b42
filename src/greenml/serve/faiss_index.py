"""FaissIndex: approximate cosine search (FAISS HNSW), the option beyond ~100k cached prompts.

Lazy imports: faiss (~0.2 s) and numpy (~0.1 s) are imported inside the functions that
use them, so importing this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError
from greenml.serve.vector_index import check_threshold, normalized

if TYPE_CHECKING:
    from greenml.serve.vector_index import Vectors


class FaissIndex:
    """Approximate search with a FAISS HNSW graph (inner product on unit vectors).

    Removed keys are tombstoned and the graph is rebuilt once a quarter of it
    is dead (HNSW cannot delete). Approximate: a match above the threshold may
    be missed (a miss, never a wrong answer: scores are exact inner products).

    Args:
        dim: Vector size.
        m: HNSW neighbours per node.
        ef_search: Breadth of the search (recall against speed).
    """

    exact = False

    def __init__(self, dim: int, *, m: int = 32, ef_search: int = 64) -> None:
        try:
            import faiss
        except ImportError:
            raise ConfigError(
                "the FAISS index needs faiss-cpu: pip install 'greenml[ann]'"
            ) from None
        self.dim = dim
        self._faiss = faiss
        self._m = m
        self._ef = ef_search
        self._keys: list[str | None] = []
        self._ids: dict[str, int] = {}
        self._rows: list[Vectors] = []
        self._dead = 0
        self._index = self._new()

    def _new(self) -> Any:
        index = self._faiss.IndexHNSWFlat(self.dim, self._m, self._faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efSearch = self._ef
        return index

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, key: str, vector: Any) -> None:
        """Insert or replace ``key``."""
        v = normalized(vector, self.dim)
        self.remove(key)
        self._ids[key] = len(self._keys)
        self._keys.append(key)
        self._rows.append(v)
        self._index.add(v.reshape(1, -1))

    def add_many(self, keys: Sequence[str], vectors: Any) -> None:
        """Insert or replace several keys."""
        for key, vector in zip(keys, vectors, strict=True):
            self.add(key, vector)

    def remove(self, key: str) -> bool:
        """Tombstone ``key``; rebuild when a quarter of the graph is dead."""
        i = self._ids.pop(key, None)
        if i is None:
            return False
        self._keys[i] = None
        self._dead += 1
        if self._dead > max(256, len(self._keys) // 4):
            self._rebuild()
        return True

    def _rebuild(self) -> None:
        import numpy as np

        live = [(k, v) for k, v in zip(self._keys, self._rows, strict=True) if k is not None]
        self._keys = [k for k, _ in live]
        self._rows = [v for _, v in live]
        self._ids = {k: i for i, k in enumerate(self._keys) if k is not None}
        self._dead = 0
        self._index = self._new()
        if live:
            self._index.add(np.stack(self._rows))

    def search(self, query: Any, threshold: float) -> tuple[str, float] | None:
        """The most similar live key found with cosine ≥ ``threshold``."""
        check_threshold(threshold)
        if not self._ids:
            return None
        q = normalized(query, self.dim).reshape(1, -1)
        k = min(len(self._keys), 8 + min(self._dead, 56))
        scores, ids = self._index.search(q, k)
        for score, i in zip(scores[0], ids[0], strict=True):
            if i < 0 or score < threshold:
                break
            key = self._keys[int(i)]
            if key is not None:
                return key, min(float(score), 1.0)
        return None

"""Choose a semantic-cache vector index by name: exact (NumPy) or FAISS HNSW."""

from __future__ import annotations

from greenml.errors import ConfigError
from greenml.serve.faiss_index import FaissIndex  # cheap: faiss itself is imported on first use
from greenml.serve.vector_index import ExactIndex, VectorIndex


def make_index(kind: str, dim: int, capacity: int = 1024) -> VectorIndex:
    """``exact`` (NumPy) or ``faiss`` (HNSW, approximate)."""
    if kind == "exact":
        return ExactIndex(dim, capacity)
    if kind == "faiss":
        return FaissIndex(dim)
    raise ConfigError(f"index must be 'exact' or 'faiss', not {kind!r}")

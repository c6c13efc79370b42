"""The interface both cache stores implement (in memory, Redis)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from greenml.serve.cache.breaker import Health


class CacheBackend(Protocol):
    """A bounded ``key → bytes`` store with a TTL, counters and (optionally) shared vectors."""

    shared: bool  # other processes see the same entries

    def get(self, key: str) -> bytes | None:
        """The bytes under ``key``, ``None`` if absent or expired (a hit refreshes recency)."""
        ...

    def put(
        self, key: str, data: bytes, ttl_s: float | None = None, vector: bytes | None = None
    ) -> list[str]:
        """Store ``data`` (and a semantic vector); the keys evicted to make room."""
        ...

    def delete(self, key: str) -> bool:
        """Remove ``key``; False if absent."""
        ...

    def __len__(self) -> int: ...

    def add_stats(self, deltas: Mapping[str, float]) -> None:
        """Add to the counters."""
        ...

    def read_stats(self) -> dict[str, float]:
        """The counters."""
        ...

    def vectors_since(self, cursor: int) -> tuple[int, list[tuple[str, bytes]]]:
        """Semantic vectors added after ``cursor`` by any process, and the new cursor."""
        ...

    def health(self) -> Health | None:
        """Whether a remote store answers (``None``: a local store, never down).

        A remote store raises :class:`~greenml.serve.cache.breaker.CacheUnavailable`
        when it cannot be reached; the caches then answer without it.
        """
        ...

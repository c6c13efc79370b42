"""In-memory cache backend: an LRU of bytes with a TTL and bounds on entries and bytes.

Values are stored encoded (see :mod:`greenml.serve.codec`): the byte bound is
exact, and a caller mutating what it got back cannot corrupt the cache.
Expired entries are dropped when read, and go first when room is needed.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping

from greenml.errors import ConfigError

Clock = Callable[[], float]


class MemoryBackend:
    """A thread-safe LRU of ``key → bytes`` in this process.

    Args:
        max_entries: Evict the least recently used beyond this many entries.
        max_bytes: Evict the least recently used beyond this many bytes of
            keys and values.
        ttl_s: Default time to live of an entry (``None``: until evicted).
        clock: Monotonic clock for the TTL.
    """

    shared = False  # other processes do not see this store

    def __init__(
        self,
        *,
        max_entries: int | None = 100_000,
        max_bytes: int | None = None,
        ttl_s: float | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        if max_entries is None and max_bytes is None:
            raise ConfigError("an in-memory cache needs max_entries or max_bytes")
        for name, value in (("max_entries", max_entries), ("max_bytes", max_bytes)):
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be >= 1, got {value}")
        _check_ttl(ttl_s)
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.ttl_s = ttl_s
        self._clock = clock
        self._entries: OrderedDict[str, tuple[bytes, float]] = OrderedDict()
        self._nbytes = 0
        self._lock = threading.Lock()
        self._stats: dict[str, float] = {}
        self.evictions = 0
        self._purge_after = -float("inf")

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        """Bytes of keys and values held."""
        return self._nbytes

    def get(self, key: str) -> bytes | None:
        """The bytes under ``key`` (now the most recently used), ``None`` if absent or expired."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry[1] <= self._clock():
                self._drop(key)
                return None
            self._entries.move_to_end(key)
            return entry[0]

    def put(
        self, key: str, data: bytes, ttl_s: float | None = None, vector: bytes | None = None
    ) -> list[str]:
        """Store ``data``; returns the keys evicted to make room (``vector`` is unused here)."""
        _check_ttl(ttl_s)
        ttl = self.ttl_s if ttl_s is None else ttl_s
        expires = self._clock() + ttl if ttl is not None else float("inf")
        size = len(key) + len(data)
        if self.max_bytes is not None and size > self.max_bytes:
            raise ConfigError(f"a {size}-byte entry exceeds the cache's max_bytes={self.max_bytes}")
        with self._lock:
            if key in self._entries:
                self._drop(key)
            self._entries[key] = (bytes(data), expires)
            self._nbytes += size
            return self._evict()

    def delete(self, key: str) -> bool:
        """Remove ``key``; False if it was not there."""
        with self._lock:
            if key not in self._entries:
                return False
            self._drop(key)
            return True

    def clear(self) -> None:
        """Remove every entry and the statistics."""
        with self._lock:
            self._entries.clear()
            self._nbytes = 0
            self._stats.clear()

    def keys(self) -> list[str]:
        """Keys from least to most recently used (expired ones included until read)."""
        with self._lock:
            return list(self._entries)

    def add_stats(self, deltas: Mapping[str, float]) -> None:
        """Add to the shared counters (hits, misses, energy ...)."""
        with self._lock:
            for name, delta in deltas.items():
                self._stats[name] = self._stats.get(name, 0.0) + delta

    def read_stats(self) -> dict[str, float]:
        """The counters :meth:`add_stats` accumulated."""
        with self._lock:
            return dict(self._stats)

    def vectors_since(self, cursor: int) -> tuple[int, list[tuple[str, bytes]]]:
        """Vectors other processes added: none, this store is not shared."""
        return cursor, []

    def health(self) -> None:
        """``None``: this store is in the process, it cannot be unreachable."""
        return None

    def _drop(self, key: str) -> None:
        data, _ = self._entries.pop(key)
        self._nbytes -= len(key) + len(data)

    def _evict(self) -> list[str]:
        evicted: list[str] = []
        if self._over() and self._clock() >= self._purge_after:
            evicted = self._purge_expired()
        entries = self._entries
        while self._over() and len(entries) > 1:
            key = next(iter(entries))
            self._drop(key)
            evicted.append(key)
        self.evictions += len(evicted)
        return evicted

    def _over(self) -> bool:
        return (self.max_entries is not None and len(self._entries) > self.max_entries) or (
            self.max_bytes is not None and self._nbytes > self.max_bytes
        )

    def _purge_expired(self) -> list[str]:
        """Drop every expired entry: O(n), so at most once a second, when room is needed."""
        now = self._clock()
        self._purge_after = now + 1.0
        dead = [k for k, (_, expires) in self._entries.items() if expires <= now]
        for key in dead:
            self._drop(key)
        return dead


def _check_ttl(ttl_s: float | None) -> None:
    if ttl_s is not None and not ttl_s > 0:
        raise ConfigError(f"a TTL must be > 0 s, got {ttl_s}")

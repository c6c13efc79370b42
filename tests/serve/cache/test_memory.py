"""The in-memory backend: LRU order, byte and entry bounds, TTL."""

from __future__ import annotations

import pytest

from greenml.errors import ConfigError
from greenml.serve.cache.memory import MemoryBackend
from tests.helpers import ManualClock


def test_lru_eviction_order() -> None:
    cache = MemoryBackend(max_entries=3)
    for key in "abc":
        assert cache.put(key, key.encode()) == []
    assert cache.get("a") == b"a"  # a is now the most recently used
    assert cache.put("d", b"d") == ["b"]
    assert cache.keys() == ["c", "a", "d"]
    assert cache.put("c", b"C") == []  # replacing refreshes, evicts nothing
    assert cache.put("e", b"e") == ["a"]
    assert cache.keys() == ["d", "c", "e"] and cache.get("c") == b"C"
    assert cache.evictions == 2


def test_byte_bound() -> None:
    cache = MemoryBackend(max_entries=None, max_bytes=30)
    cache.put("k1", b"x" * 8)  # 10 bytes with its key
    cache.put("k2", b"x" * 8)
    cache.put("k3", b"x" * 8)
    assert cache.nbytes == 30
    assert cache.put("k4", b"x" * 13) == ["k1", "k2"]
    assert cache.nbytes == 25
    with pytest.raises(ConfigError, match="exceeds"):
        cache.put("big", b"x" * 40)
    assert cache.keys() == ["k3", "k4"]


def test_ttl_expiry_and_expired_entries_go_first() -> None:
    clock = ManualClock()
    cache = MemoryBackend(max_entries=2, ttl_s=10.0, clock=clock)
    cache.put("old", b"1")
    cache.put("short", b"2", ttl_s=1.0)
    clock.advance(0.5)
    assert cache.get("short") == b"2"
    clock.advance(0.6)
    assert cache.get("short") is None and len(cache) == 1
    cache.put("s2", b"3", ttl_s=1.0)
    cache.get("old")  # old is the most recent now, s2 the least
    clock.advance(2.0)  # s2 expired, unread
    assert cache.put("new", b"4") == ["s2"]  # the expired one goes, not the LRU-live one
    assert cache.keys() == ["old", "new"]
    clock.advance(9.0)
    assert cache.get("old") is None


def test_stats_and_bad_settings() -> None:
    cache = MemoryBackend()
    cache.add_stats({"hits": 1, "miss_energy_j": 2.5})
    cache.add_stats({"hits": 2})
    assert cache.read_stats() == {"hits": 3.0, "miss_energy_j": 2.5}
    with pytest.raises(ConfigError):
        MemoryBackend(max_entries=None)
    with pytest.raises(ConfigError):
        MemoryBackend(ttl_s=0)
    with pytest.raises(ConfigError):
        cache.put("k", b"v", ttl_s=-1)

"""The Redis backend against a real Redis server: expiry in ms, LRU across processes, errors."""

from __future__ import annotations

import time
from typing import Any

import pytest

from greenml.errors import CacheUnavailable, ConfigError
from greenml.serve.cache.redis import RedisBackend


def test_put_get_and_namespace(redis_backend: RedisBackend) -> None:
    assert redis_backend.get("k") is None
    redis_backend.put("k", b"\x00binary\xff")
    assert redis_backend.get("k") == b"\x00binary\xff"
    assert redis_backend.client.exists(f"{redis_backend.namespace}:v:k") == 1
    assert len(redis_backend) == 1
    assert redis_backend.delete("k") and not redis_backend.delete("k")
    assert len(redis_backend) == 0


def test_ttl_is_redis_expiry_with_ms_precision(redis_backend: RedisBackend) -> None:
    redis_backend.put("short", b"v", ttl_s=0.15)
    redis_backend.put("forever", b"v")
    pttl = redis_backend.client.pttl(f"{redis_backend.namespace}:v:short")
    assert 0 < pttl <= 150  # set with PX: milliseconds, not rounded to seconds
    assert redis_backend.client.pttl(f"{redis_backend.namespace}:v:forever") == -1
    assert redis_backend.get("short") == b"v"
    time.sleep(0.25)
    assert redis_backend.get("short") is None
    redis_backend.put("other", b"v")  # a put sweeps the expired entry's bookkeeping
    assert sorted(redis_backend.keys()) == ["forever", "other"]


def test_lru_eviction_order_is_shared_by_processes(redis_url: str, namespace: str) -> None:
    one = RedisBackend(redis_url, namespace=namespace, max_entries=3)
    two = RedisBackend(redis_url, namespace=namespace, max_entries=3)  # another client
    try:
        for key in "abc":
            assert one.put(key, key.encode()) == []
        assert two.get("a") == b"a"  # a hit from the other client refreshes a
        assert one.put("d", b"d") == ["b"]
        assert two.keys() == ["c", "a", "d"]
        assert two.get("b") is None
        assert one.client.exists(f"{namespace}:v:b") == 0
    finally:
        one.clear()
        one.close()
        two.close()


def test_stats_and_vectors_are_shared(redis_backend: RedisBackend) -> None:
    redis_backend.add_stats({"hits": 2, "miss_energy_j": 1.5})
    redis_backend.add_stats({"hits": 1})
    assert redis_backend.read_stats() == {"hits": 3.0, "miss_energy_j": 1.5}
    redis_backend.put("s:1", b"v1", vector=b"\x01\x02\x03\x04")
    redis_backend.put("s:2", b"v2", vector=b"\x05\x06\x07\x08")
    cursor, rows = redis_backend.vectors_since(0)
    assert rows == [("s:1", b"\x01\x02\x03\x04"), ("s:2", b"\x05\x06\x07\x08")]
    assert redis_backend.vectors_since(cursor) == (cursor, [])


def test_clear_removes_only_its_namespace(redis_url: str, namespace: str) -> None:
    mine = RedisBackend(redis_url, namespace=namespace)
    other = RedisBackend(redis_url, namespace=namespace + "x")
    try:
        mine.put("k", b"1")
        other.put("k", b"2")
        mine.clear()
        assert mine.get("k") is None and other.get("k") == b"2"
        assert list(mine.client.scan_iter(match=f"{namespace}:*")) == []
    finally:
        other.clear()
        mine.close()
        other.close()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"namespace": "has space"}, "namespace"),
        ({"namespace": "a*"}, "namespace"),
        ({"max_entries": 0}, "max_entries"),
        ({"ttl_s": 0}, "TTL"),
    ],
)
def test_bad_settings(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        RedisBackend("redis://127.0.0.1:1/0", **kwargs)


def test_unreachable_server_is_one_clear_error() -> None:
    backend = RedisBackend("redis://127.0.0.1:1/0", timeout_s=0.5)
    with pytest.raises(CacheUnavailable, match=r"Redis at 127.0.0.1:1 is unreachable"):
        backend.get("k")
    with pytest.raises(CacheUnavailable, match=r"next try in 0\.\d s"):
        backend.put("k", b"v")  # backing off: refused without a network call
    assert backend.health().failed_calls == 1


def test_bad_url() -> None:
    with pytest.raises(ConfigError, match="bad Redis URL"):
        RedisBackend("http://127.0.0.1:6379")

"""Redis cache backend: values shared by every process, bounded by an LRU over entries.

Layout under the namespace ``NS`` (a prefix of letters, digits, ``._-``)::

    NS:v:KEY   the encoded value (a string key; its TTL is Redis' own, set with PX)
    NS:lru     sorted set KEY → access tick (NS:tick, incremented at each put/hit)
    NS:exp     sorted set KEY → expiry (ms, server clock), for entries with a TTL
    NS:vec     hash KEY → float32 vector (semantic cache), NS:log its insertion order
    NS:stats   hash of counters (hits, misses, energy ...), shared by every process

The entry bound is enforced here, not by Redis' ``maxmemory-policy``: that
policy is server-wide (it would evict other applications' keys too) and knows
bytes, not entries. Each put runs one Lua script that drops the expired
entries' bookkeeping, writes the value, and evicts the least recently used
entries beyond ``max_entries``. A hit is one script too (GET, then bump the
tick), one round trip. For a byte bound, give Redis a ``maxmemory`` with
``volatile-lru`` and the cache a TTL. Standalone Redis (or Sentinel) only:
the scripts touch keys they do not declare, which Redis Cluster forbids.

Every call goes through a :class:`~greenml.serve.cache.breaker.Breaker`: an
unreachable, hung or dropped Redis raises
:class:`~greenml.serve.cache.breaker.CacheUnavailable` after at most
``timeout_s`` (100 ms by default, no redis-py retries), and then at once,
without a network call, until the backoff lets one call probe the server
again. The caches catch it and answer without the cache (they fail open).

Lazy imports: redis, when a Redis backend is opened.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from greenml.errors import ConfigError
from greenml.serve.cache.breaker import Breaker, Health

_NAMESPACE = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")

_GET = """
local v = redis.call('GET', KEYS[1])
if v then redis.call('ZADD', KEYS[2], 'XX', redis.call('INCR', KEYS[3]), ARGV[1]) end
return v
"""

_PUT = """
local ns, key, data = ARGV[1], ARGV[2], ARGV[3]
local ttl, maxn, vec = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local lru, exp, vecs, log = ns..':lru', ns..':exp', ns..':vec', ns..':log'
local function forget(k)
  redis.call('ZREM', lru, k); redis.call('ZREM', exp, k)
  redis.call('HDEL', vecs, k); redis.call('ZREM', log, k)
end
for _, k in ipairs(redis.call('ZRANGEBYSCORE', exp, '-inf', now)) do
  if redis.call('EXISTS', ns..':v:'..k) == 0 then forget(k) end
end
if ttl > 0 then
  redis.call('SET', ns..':v:'..key, data, 'PX', ttl)
  redis.call('ZADD', exp, now + ttl, key)
else
  redis.call('SET', ns..':v:'..key, data)
  redis.call('ZREM', exp, key)
end
redis.call('ZADD', lru, redis.call('INCR', ns..':tick'), key)
if vec ~= '' then
  redis.call('HSET', vecs, key, vec)
  redis.call('ZADD', log, redis.call('INCR', ns..':seq'), key)
end
local evicted = {}
if maxn > 0 then
  local extra = redis.call('ZCARD', lru) - maxn
  if extra > 0 then
    evicted = redis.call('ZRANGE', lru, 0, extra - 1)
    for _, k in ipairs(evicted) do redis.call('DEL', ns..':v:'..k); forget(k) end
  end
end
return evicted
"""


class RedisBackend:
    """A cache store in Redis, shared by every process that uses the same namespace.

    Args:
        url: ``redis://host:port/db`` (ignored when ``client`` is given).
        namespace: Prefix of every key this cache writes.
        max_entries: Evict the least recently used beyond this many entries.
        ttl_s: Default time to live (millisecond precision; ``None``: none).
        client: A ``redis.Redis`` to use instead of connecting to ``url`` (its own
            timeouts and retries apply).
        timeout_s: Connect and read timeout of the connection made here: what a
            hung Redis adds to one request before the cache is bypassed.
        backoff_s: After a failure, how long no call goes to Redis before one
            probes it again (doubling at each failed probe).
        max_backoff_s: The longest wait between probes.
        clock: Monotonic clock of the backoff.
    """

    shared = True

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        namespace: str = "greenml-cache",
        max_entries: int | None = 100_000,
        ttl_s: float | None = None,
        client: Any = None,
        timeout_s: float = 0.1,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not _NAMESPACE.match(namespace):
            raise ConfigError(
                f"namespace {namespace!r}: use 1-64 letters, digits, '.', '_' or '-'"
            )
        if max_entries is not None and max_entries < 1:
            raise ConfigError(f"max_entries must be >= 1, got {max_entries}")
        if ttl_s is not None and not ttl_s > 0:
            raise ConfigError(f"a TTL must be > 0 s, got {ttl_s}")
        if not timeout_s > 0:
            raise ConfigError(f"timeout_s must be > 0, got {timeout_s}")
        try:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry
        except ImportError:
            raise ConfigError(
                "the Redis cache needs redis-py: pip install 'greenml[serve]'"
            ) from None
        if client is None:
            try:
                client = redis.Redis.from_url(
                    url,
                    socket_timeout=timeout_s,
                    socket_connect_timeout=timeout_s,
                    retry=Retry(NoBackoff(), 0),  # the breaker decides when to try again
                )
            except ValueError as exc:
                from greenml.store.url import mask_url

                raise ConfigError(f"bad Redis URL {mask_url(url)!r}: {exc}") from None
        where = client.connection_pool.connection_kwargs
        self.breaker = Breaker(
            f"Redis at {where.get('host', '?')}:{where.get('port', '?')}",
            # Any Redis error: a full server, a port that is not Redis, a refused script.
            (redis.RedisError,),
            backoff_s=backoff_s,
            max_backoff_s=max_backoff_s,
            clock=clock,
        )
        self.client = client
        self.namespace = namespace
        self.max_entries = max_entries
        self.ttl_s = ttl_s
        self._get = client.register_script(_GET)
        self._put = client.register_script(_PUT)
        self._keys = (f"{namespace}:lru", f"{namespace}:tick")

    def _value_key(self, key: str) -> str:
        return f"{self.namespace}:v:{key}"

    def get(self, key: str) -> bytes | None:
        """The bytes under ``key`` (now the most recently used), ``None`` if absent or expired."""
        with self.breaker.call():
            data = self._get(keys=(self._value_key(key), *self._keys), args=(key,))
        return bytes(data) if data is not None else None

    def put(
        self, key: str, data: bytes, ttl_s: float | None = None, vector: bytes | None = None
    ) -> list[str]:
        """Store ``data`` (and a semantic vector); returns the keys evicted to make room."""
        if ttl_s is not None and not ttl_s > 0:
            raise ConfigError(f"a TTL must be > 0 s, got {ttl_s}")
        ttl = self.ttl_s if ttl_s is None else ttl_s
        ttl_ms = max(1, round(ttl * 1000)) if ttl is not None else 0
        args = (self.namespace, key, data, ttl_ms, self.max_entries or 0, vector or b"")
        with self.breaker.call():
            evicted = self._put(keys=(), args=args)
        return [k.decode() if isinstance(k, bytes) else str(k) for k in evicted]

    def delete(self, key: str) -> bool:
        """Remove ``key``; False if it was not there."""
        ns = self.namespace
        with self.breaker.call():
            pipe = self.client.pipeline(transaction=True)
            pipe.delete(self._value_key(key))
            for zset in ("lru", "exp", "log"):
                pipe.zrem(f"{ns}:{zset}", key)
            pipe.hdel(f"{ns}:vec", key)
            return bool(pipe.execute()[0])

    def __len__(self) -> int:
        """Entries in the LRU (expired ones count until the next put sweeps them)."""
        with self.breaker.call():
            return int(self.client.zcard(self._keys[0]))

    def keys(self) -> list[str]:
        """Keys from least to most recently used."""
        with self.breaker.call():
            raw = self.client.zrange(self._keys[0], 0, -1)
        return [k.decode() for k in raw]

    def clear(self) -> None:
        """Delete every key of the namespace (values, bookkeeping and statistics)."""
        with self.breaker.call():
            batch: list[Any] = []
            for name in self.client.scan_iter(match=f"{self.namespace}:*", count=1000):
                batch.append(name)
                if len(batch) >= 1000:
                    self.client.delete(*batch)
                    batch = []
            if batch:
                self.client.delete(*batch)

    def add_stats(self, deltas: Mapping[str, float]) -> None:
        """Add to the counters every process shares."""
        if not deltas:
            return
        with self.breaker.call():
            pipe = self.client.pipeline(transaction=False)
            for name, delta in deltas.items():
                pipe.hincrbyfloat(f"{self.namespace}:stats", name, float(delta))
            pipe.execute()

    def read_stats(self) -> dict[str, float]:
        """The shared counters."""
        with self.breaker.call():
            raw = self.client.hgetall(f"{self.namespace}:stats")
        return {k.decode(): float(v) for k, v in raw.items()}

    def vectors_since(self, cursor: int) -> tuple[int, list[tuple[str, bytes]]]:
        """Semantic vectors added after ``cursor`` (by any process), and the new cursor."""
        ns = self.namespace
        with self.breaker.call():
            rows = self.client.zrangebyscore(f"{ns}:log", f"({cursor}", "+inf", withscores=True)
            if not rows:
                return cursor, []
            keys = [k for k, _ in rows]
            vectors = self.client.hmget(f"{ns}:vec", keys)
        out = [(k.decode(), v) for k, v in zip(keys, vectors, strict=True) if v is not None]
        return int(max(score for _, score in rows)), out

    def health(self) -> Health:
        """Whether Redis answers, and the outages and failed or skipped calls so far."""
        return self.breaker.health()

    def close(self) -> None:
        """Close the connection pool."""
        self.client.close()

"""Redis exact-match lookup over loopback: greenml next to a raw redis-py GET, same run.

Target (greenml issue 9): p99 of an exact-match lookup ≤ 2 ms on loopback. Measured,
interleaved so that both see the same server and machine load:

- ``raw GET``: ``redis.Redis.get(key)`` of the very same value key (the peer);
- ``backend get``: ``RedisBackend.get`` (one script: GET, then bump the LRU tick);
- ``cache get``: ``ResponseCache.get`` (normalize + SHA-256 the request, the backend
  get, JSON decode, hit counting flushed once a second).

Needs a Redis server (``--url``, default ``redis://127.0.0.1:6379/0``); the keys
live under a fresh namespace, deleted at the end. Exit code 0 even when the
target fails: this is a report, not a test.

Usage::

    python benchmarks/redis_cache_speed.py [--url URL] [--lookups 5000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid

TARGET_P99_MS = 2.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    import redis

    from greenml.serve.cache.keys import cache_key
    from greenml.serve.cache.redis import RedisBackend
    from greenml.serve.cache.response import ResponseCache

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--lookups", type=int, default=5000)
    args = parser.parse_args(argv)

    namespace = f"greenml-bench-{uuid.uuid4().hex[:8]}"
    backend = RedisBackend(args.url, namespace=namespace, max_entries=100_000)
    raw = redis.Redis.from_url(args.url)
    cache = ResponseCache(backend, flush_every_s=1.0)
    prompt, model, params = "Summarize the following text: ...", "llama-3-8b", {"temperature": 0}
    answer = {"text": "A short summary. " * 20, "tokens": 84}
    cache.put(prompt, answer, model=model, params=params)
    for i in range(1000):  # a cache that holds more than one entry
        cache.put(f"other prompt {i}", answer, model=model)
    key = cache_key(prompt, model, params)
    value_key = f"{namespace}:v:{key}"
    assert raw.get(value_key) == backend.get(key)

    samples: dict[str, list[float]] = {"raw GET": [], "backend get": [], "cache get": []}
    calls = {
        "raw GET": lambda: raw.get(value_key),
        "backend get": lambda: backend.get(key),
        "cache get": lambda: cache.get(prompt, model=model, params=params),
    }
    try:
        for _ in range(200):  # warm up connections and scripts
            for fn in calls.values():
                fn()
        for _ in range(args.lookups):
            for name, fn in calls.items():
                t0 = time.perf_counter()
                result = fn()
                samples[name].append((time.perf_counter() - t0) * 1000)
                assert result is not None
    finally:
        backend.clear()
        backend.close()
        raw.close()

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"redis {raw.connection_pool.connection_kwargs.get('host')}: "
          f"{args.lookups} lookups each, interleaved; load average {load:.1f}")  # fmt: skip
    print(f"  {'method':<12} {'mean ms':>8} {'p50 ms':>8} {'p99 ms':>8}")
    for name, values in samples.items():
        print(f"  {name:<12} {statistics.fmean(values):8.3f} {percentile(values, 50):8.3f} "
              f"{percentile(values, 99):8.3f}")  # fmt: skip
    base = percentile(samples["raw GET"], 99)
    for name in ("backend get", "cache get"):
        print(f"  p99 ratio {name} / raw GET: {percentile(samples[name], 99) / base:.2f}")
    p99 = percentile(samples["cache get"], 99)
    verdict = "PASS" if p99 <= TARGET_P99_MS else "FAIL"
    print(f"  target: exact-match lookup p99 ≤ {TARGET_P99_MS} ms → {p99:.3f} ms {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""ResponseCache: answer a repeated request from the cache, and count the energy saved.

``get``/``put`` on a normalized key (:mod:`greenml.serve.cache.keys`), or
``cached(fn)`` around a function ``fn(prompt, **params)``. With a
RequestMeter, every miss the wrapper computes is measured (its time-overlap
share of the sampled power) and each hit is credited with the mean energy of
a miss; misses computed elsewhere can report theirs with ``put(...,
energy_j=...)`` or :meth:`ResponseCache.record_miss_energy`.

Both caches fail open: with their store unreachable (a Redis refused, hung or
dropped), ``get`` answers ``None`` and ``put`` writes nothing, without
raising; the wrapper calls the function (route ``NAME:bypass``) and counts a
bypass in the stats. The backend's breaker keeps a dead store from costing
more than a probe now and then (:mod:`greenml.serve.cache.breaker`).

Lazy imports: the memory backend, only when no backend is given.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from greenml.errors import CacheUnavailable, ConfigError
from greenml.serve.backend import CacheBackend
from greenml.serve.cache.keys import cache_key
from greenml.serve.cache.stats import CacheStats, StatsRecorder
from greenml.serve.codec import Codec, JsonCodec
from greenml.serve.requests import RequestMeter, SettledRequest


@dataclass(frozen=True)
class Hit:
    """A cached answer: the value, its key, and how close the match was (1.0: exact)."""

    value: Any
    key: str
    score: float = 1.0


class CacheAccounting:
    """Hits, misses and miss energies of one cache (shared by both cache kinds)."""

    def __init__(
        self,
        backend: CacheBackend,
        name: str,
        request_meter: RequestMeter | None,
        price_usd_per_kwh: float | None,
        flush_every_s: float,
    ) -> None:
        if price_usd_per_kwh is not None and not price_usd_per_kwh >= 0:
            raise ConfigError(f"the price must be >= 0 USD/kWh, got {price_usd_per_kwh}")
        self.name = name
        self.request_meter = request_meter
        self.price_usd_per_kwh = price_usd_per_kwh
        self.backend = backend
        self.recorder = StatsRecorder(backend, flush_every_s=flush_every_s)
        self.miss_route = f"{name}:miss"
        self.hit_route = f"{name}:hit"
        self.error_route = f"{name}:error"
        self.bypass_route = f"{name}:bypass"
        if request_meter is not None:
            request_meter.add_listener(self._settled)

    def _settled(self, request: SettledRequest) -> None:
        if request.route == self.miss_route:
            self.recorder.miss_energy(request.energy_j, request.uncertainty_rel)

    def stats(self) -> CacheStats:
        if self.request_meter is not None:
            self.request_meter.settle()
        stats = self.recorder.read(self.price_usd_per_kwh)
        health = self.backend.health()
        if health is None:
            return stats
        return replace(stats, backend_up=health.up, outages=health.outages)

    def wrap(
        self,
        fn: Callable[..., Any],
        lookup: Callable[[Any, Mapping[str, Any]], Hit | None],
        store: Callable[[Any, Any, Mapping[str, Any]], object],
    ) -> Callable[..., Any]:
        """``fn(prompt, **params)`` answered from the cache, misses measured.

        ``lookup`` raises CacheUnavailable when the store is down: the call is
        then a bypass (computed, not stored).
        """
        rm = self.request_meter
        hit_route, miss_route, error_route = self.hit_route, self.miss_route, self.error_route
        recorder, bypass_route = self.recorder, self.bypass_route

        def find(prompt: Any, params: Mapping[str, Any]) -> tuple[Hit | None, str]:
            try:
                return lookup(prompt, params), miss_route
            except CacheUnavailable:
                recorder.bypass()
                return None, bypass_route

        def begin() -> int | None:
            return rm.begin(hit_route) if rm is not None else None

        def finish(token: int | None, route: str) -> None:
            if rm is not None and token is not None:
                rm.finish(token, route)

        # One request per call: a hit's lookup, or a miss's lookup and computation.
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(prompt: Any, **params: Any) -> Any:
                token = begin()
                hit, route = find(prompt, params)
                if hit is not None:
                    finish(token, hit_route)
                    return hit.value
                try:
                    value = await fn(prompt, **params)
                except BaseException:
                    finish(token, error_route)  # spent, but not the cost of an answer
                    raise
                finish(token, route)
                if route == miss_route:
                    store(prompt, value, params)
                return value

            return async_wrapper

        @functools.wraps(fn)
        def wrapper(prompt: Any, **params: Any) -> Any:
            token = begin()
            hit, route = find(prompt, params)
            if hit is not None:
                finish(token, hit_route)
                return hit.value
            try:
                value = fn(prompt, **params)
            except BaseException:
                finish(token, error_route)  # spent, but not the cost of an answer
                raise
            finish(token, route)
            if route == miss_route:
                store(prompt, value, params)
            return value

        return wrapper


class AccountedCache(ABC):
    """What both caches share: fail-open get/put, ``cached(fn)`` wrappers, stats out.

    Subclasses set ``self.accounting`` and provide ``_key``, ``_lookup`` and
    ``_store`` (the last two raise CacheUnavailable when the store is down).
    """

    accounting: CacheAccounting

    @abstractmethod
    def _key(self, prompt: Any, model: str, params: Mapping[str, Any] | None) -> str:
        """The key an answer to this request is stored under."""

    @abstractmethod
    def _lookup(self, prompt: Any, model: str, params: Mapping[str, Any] | None) -> Hit | None:
        """The cached answer, counted as a hit or a miss; raises CacheUnavailable."""

    @abstractmethod
    def _store(
        self,
        key: str,
        prompt: Any,
        value: Any,
        model: str,
        params: Mapping[str, Any] | None,
        ttl_s: float | None,
    ) -> None:
        """Encode (ConfigError before any write), then write; raises CacheUnavailable."""

    def get(
        self, prompt: Any, *, model: str = "", params: Mapping[str, Any] | None = None
    ) -> Hit | None:
        """The cached answer, or ``None``: a miss, or a bypass while the store is down."""
        try:
            return self._lookup(prompt, model, params)
        except CacheUnavailable:
            self.accounting.recorder.bypass()
            return None

    def put(
        self,
        prompt: Any,
        value: Any,
        *,
        model: str = "",
        params: Mapping[str, Any] | None = None,
        ttl_s: float | None = None,
        energy_j: float | None = None,
        uncertainty_rel: float = 0.0,
    ) -> str:
        """Store an answer; ``energy_j``: what computing it cost (credited to later hits).

        Nothing is written while the store is down (and nothing raised).

        Raises:
            ConfigError: The value cannot be encoded (nothing is written).
        """
        key = self._key(prompt, model, params)
        with contextlib.suppress(CacheUnavailable):  # fail open: the breaker logged it
            self._store(key, prompt, value, model, params, ttl_s)
        if energy_j is not None:
            self.record_miss_energy(energy_j, uncertainty_rel)
        return key

    def record_miss_energy(self, energy_j: float, uncertainty_rel: float = 0.0) -> None:
        """The measured energy of one miss, computed outside :meth:`cached`."""
        if not energy_j >= 0:
            raise ConfigError(f"a miss's energy must be >= 0 J, got {energy_j}")
        self.accounting.recorder.miss_energy(energy_j, uncertainty_rel)

    def cached(self, fn: Callable[..., Any], *, model: str = "") -> Callable[..., Any]:
        """``fn(prompt, **params)`` (sync or async) answered from this cache when it can."""

        def lookup(prompt: Any, params: Mapping[str, Any]) -> Hit | None:
            return self._lookup(prompt, model, params)

        def store(prompt: Any, value: Any, params: Mapping[str, Any]) -> None:
            self.put(prompt, value, model=model, params=params)

        return self.accounting.wrap(fn, lookup, store)

    def stats(self) -> CacheStats:
        """Hits, misses, bypasses, energy and USD saved (every process's, for Redis)."""
        return self.accounting.stats()


class ResponseCache(AccountedCache):
    """Exact-match cache of responses on the normalized (prompt, model, parameters).

    Args:
        backend: Where entries live; default: an in-memory LRU of 100,000 entries.
        codec: Value serialization (default JSON); a value it cannot encode
            fails at ``put`` and nothing is written.
        request_meter: Measures the misses :meth:`cached` computes.
        name: Prefix of the cache's routes (``NAME:miss``, ``NAME:hit``, ``NAME:error``,
            ``NAME:bypass`` while the store is down).
        price_usd_per_kwh: Electricity price for the USD saved.
        ttl_s: Time to live of entries put here (default: the backend's).
        flush_every_s: How often local counts go to the backend's counters.
    """

    def __init__(
        self,
        backend: CacheBackend | None = None,
        *,
        codec: Codec | None = None,
        request_meter: RequestMeter | None = None,
        name: str = "response-cache",
        price_usd_per_kwh: float | None = None,
        ttl_s: float | None = None,
        flush_every_s: float = 1.0,
    ) -> None:
        if backend is None:
            from greenml.serve.cache.memory import MemoryBackend

            backend = MemoryBackend()
        self.backend = backend
        self.codec: Codec = codec or JsonCodec()
        self.ttl_s = ttl_s
        self.accounting = CacheAccounting(
            backend, name, request_meter, price_usd_per_kwh, flush_every_s
        )

    def key(self, prompt: Any, model: str = "", params: Mapping[str, Any] | None = None) -> str:
        """The cache key of a request."""
        return cache_key(prompt, model, params)

    def _key(self, prompt: Any, model: str, params: Mapping[str, Any] | None) -> str:
        return self.key(prompt, model, params)

    def _lookup(self, prompt: Any, model: str, params: Mapping[str, Any] | None) -> Hit | None:
        key = cache_key(prompt, model, params)
        data = self.backend.get(key)
        recorder = self.accounting.recorder
        if data is None:
            recorder.miss()
            return None
        recorder.hit()
        return Hit(self.codec.decode(data), key)

    def _store(
        self,
        key: str,
        prompt: Any,
        value: Any,
        model: str,
        params: Mapping[str, Any] | None,
        ttl_s: float | None,
    ) -> None:
        data = self.codec.encode(value)  # before any write
        self.backend.put(key, data, ttl_s if ttl_s is not None else self.ttl_s)

"""Prometheus metrics of a RequestMeter, on any CollectorRegistry (the exporter's too).

- ``greenml_request_energy_joules`` (histogram): energy per request, per route;
- ``greenml_requests_total`` (counter): requests finished, per route;
- ``greenml_serving_idle_energy_joules_total`` (counter): energy while no
  request was in flight (never charged to a request).

Labels follow :mod:`greenml.exporter.collector`: ``host``, ``greenml_job`` and
``method`` (how the energy was obtained: ``power-integrated`` or
``estimated``), plus ``route`` (``GET /items/{item_id}``). Wh per 1,000
requests in PromQL: ``rate(..._sum[5m]) / rate(..._count[5m]) * 1000 / 3600``.

A scrape settles the finished requests first, so the figures are as fresh as
the last power sample. With the exporter, ``export_request_metrics(rm,
exporter)`` puts them on the exporter's own ``/metrics``.

A response or semantic cache (:class:`CacheMetrics`, ``export_cache_metrics``),
this process's counts, read without touching the cache's store:

- ``greenml_cache_lookups_total`` (counter): per ``cache`` and ``result``
  (``hit``, ``miss``, or ``bypass``: answered without the cache, its store down);
- ``greenml_cache_backend_up`` (gauge): 1 while the store answers, 0 in an outage;
- ``greenml_cache_backend_outages_total`` (counter): outages begun;
- ``greenml_cache_backend_calls_total`` (counter): calls to the store that
  ``failed``, or were ``skipped`` while backing off.

The last three only for a remote store (Redis).

Lazy imports: prometheus_client (~50 ms) is imported inside the functions that use it,
so importing this module stays cheap.
"""

from __future__ import annotations

import bisect
import socket
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from greenml.serve.requests import RequestMeter, SettledRequest

if TYPE_CHECKING:
    from greenml.serve.cache.response import AccountedCache

ENERGY_METRIC = "greenml_request_energy_joules"
REQUESTS_METRIC = "greenml_requests"  # exposed as greenml_requests_total
IDLE_METRIC = "greenml_serving_idle_energy_joules"  # exposed with _total
CACHE_LOOKUPS_METRIC = "greenml_cache_lookups"  # exposed with _total
CACHE_UP_METRIC = "greenml_cache_backend_up"
CACHE_OUTAGES_METRIC = "greenml_cache_backend_outages"  # exposed with _total
CACHE_CALLS_METRIC = "greenml_cache_backend_calls"  # exposed with _total
# 10 mJ (a tiny CPU request) to 10 kJ (a long generation on 8 GPUs)
DEFAULT_BUCKETS_J = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 10000.0)


class RequestMetrics:
    """A Prometheus collector over a RequestMeter.

    Args:
        request_meter: The source of the figures.
        buckets_j: Upper bounds of the energy histogram, in joules.
        job: Value of the ``greenml_job`` label.
        host: Value of the ``host`` label (default: this machine's hostname).
        settle_on_scrape: Settle finished requests at every scrape.
    """

    def __init__(
        self,
        request_meter: RequestMeter,
        *,
        buckets_j: Sequence[float] = DEFAULT_BUCKETS_J,
        job: str = "",
        host: str | None = None,
        settle_on_scrape: bool = True,
    ) -> None:
        self.request_meter = request_meter
        self._bounds = sorted(float(b) for b in buckets_j)
        self._host = host or socket.gethostname()
        self._job = job
        self._settle = settle_on_scrape
        self._lock = threading.Lock()
        # route → [bucket counts ..., +Inf count, sum]
        self._hist: dict[str, list[float]] = {}
        request_meter.add_listener(self._observe)

    def _observe(self, request: SettledRequest) -> None:
        with self._lock:
            row = self._hist.get(request.route)
            if row is None:
                row = self._hist[request.route] = [0.0] * (len(self._bounds) + 2)
            row[bisect.bisect_left(self._bounds, request.energy_j)] += 1
            row[-1] += request.energy_j

    def register(self, target: Any) -> RequestMetrics:
        """Register on a CollectorRegistry, or on an Exporter's (``exporter.registry``)."""
        registry = getattr(target, "registry", target)
        registry.register(self)
        return self

    def describe(self) -> list[Any]:
        """No up-front description: registering must not trigger a collect."""
        return []

    def collect(self) -> Iterator[Any]:
        """The metric families, after settling what the samples cover."""
        from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

        rm = self.request_meter
        if self._settle:
            rm.settle()
        method = rm.method
        base = (self._host, self._job)
        hist = HistogramMetricFamily(
            ENERGY_METRIC,
            "Energy per request (J), its time-overlap share of sampled power.",
            labels=("host", "greenml_job", "route", "method"),
        )
        with self._lock:
            rows = {route: list(row) for route, row in self._hist.items()}
        for route, row in sorted(rows.items()):
            cumulative, running = [], 0.0
            for bound, count in zip([*self._bounds, float("inf")], row[:-1], strict=True):
                running += count
                cumulative.append((_le(bound), running))
            hist.add_metric([*base, route, method], cumulative, sum_value=row[-1])
        requests = CounterMetricFamily(
            REQUESTS_METRIC, "Requests finished.", labels=("host", "greenml_job", "route")
        )
        for route, count in sorted(rm.finished_counts().items()):
            requests.add_metric([*base, route], float(count))
        idle = CounterMetricFamily(
            IDLE_METRIC,
            "Energy while no request was in flight (J), charged to none.",
            labels=("host", "greenml_job", "method"),
        )
        idle.add_metric([*base, method], rm.idle_energy_j())
        yield from (hist, requests, idle)


def export_request_metrics(
    request_meter: RequestMeter, target: Any, **options: Any
) -> RequestMetrics:
    """Expose a RequestMeter's metrics on ``target``: an Exporter or a CollectorRegistry.

    ``options`` go to :class:`RequestMetrics` (``job``, ``host``, ``buckets_j`` ...).
    """
    return RequestMetrics(request_meter, **options).register(target)


class CacheMetrics:
    """A Prometheus collector over a response or semantic cache (this process's counts).

    Args:
        cache: A ResponseCache or SemanticCache.
        job: Value of the ``greenml_job`` label.
        host: Value of the ``host`` label (default: this machine's hostname).
    """

    def __init__(self, cache: AccountedCache, *, job: str = "", host: str | None = None) -> None:
        self.cache = cache
        self._base = (host or socket.gethostname(), job, cache.accounting.name)

    def register(self, target: Any) -> CacheMetrics:
        """Register on a CollectorRegistry, or on an Exporter's (``exporter.registry``)."""
        getattr(target, "registry", target).register(self)
        return self

    def describe(self) -> list[Any]:
        """No up-front description: registering must not trigger a collect."""
        return []

    def collect(self) -> Iterator[Any]:
        """The metric families; never a call to the cache's store."""
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        accounting = self.cache.accounting
        totals = accounting.recorder.totals()
        labels = ("host", "greenml_job", "cache")
        lookups = CounterMetricFamily(
            CACHE_LOOKUPS_METRIC,
            "Cache lookups: hit, miss, or bypass (answered without the cache, its store down).",
            labels=(*labels, "result"),
        )
        for result, field in (("hit", "hits"), ("miss", "misses"), ("bypass", "bypasses")):
            lookups.add_metric([*self._base, result], totals.get(field, 0.0))
        yield lookups
        health = accounting.backend.health()
        if health is None:
            return
        up = GaugeMetricFamily(CACHE_UP_METRIC, "1 while the cache's store answers.", labels=labels)
        up.add_metric(list(self._base), 1.0 if health.up else 0.0)
        outages = CounterMetricFamily(
            CACHE_OUTAGES_METRIC, "Outages of the cache's store begun.", labels=labels
        )
        outages.add_metric(list(self._base), float(health.outages))
        calls = CounterMetricFamily(
            CACHE_CALLS_METRIC,
            "Calls to the cache's store that failed, or were skipped while backing off.",
            labels=(*labels, "outcome"),
        )
        calls.add_metric([*self._base, "failed"], float(health.failed_calls))
        calls.add_metric([*self._base, "skipped"], float(health.skipped_calls))
        yield from (up, outages, calls)


def export_cache_metrics(cache: AccountedCache, target: Any, **options: Any) -> CacheMetrics:
    """Expose a cache's lookups and its store's outages on an Exporter or a CollectorRegistry."""
    return CacheMetrics(cache, **options).register(target)


def _le(bound: float) -> str:
    if bound == float("inf"):
        return "+Inf"
    return repr(bound) if bound != int(bound) else f"{bound:.1f}"

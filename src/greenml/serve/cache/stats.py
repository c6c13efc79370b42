"""What a cache saved: hits, misses and the energy the hits did not spend.

Each hit is credited with the *measured mean energy of a miss* (the energy of
computing the answer the hit returned). The uncertainty of the credit combines
the standard error of that mean with the misses' own measurement uncertainty.
Counters live in the backend (:meth:`add_stats`), so a Redis cache reports the
hits and savings of every process that shares it; each process adds its
counts in batches, at most once per ``flush_every_s``.

While the store is unreachable the counts wait in this process (they are
added when it is back), and :meth:`StatsRecorder.read` answers with the last
counters it read plus this process's pending counts, marked ``stale``.
Lookups answered without the cache during an outage are *bypasses*: neither
hits nor misses, so they leave the hit rate alone.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from greenml.errors import CacheUnavailable
from greenml.quantities import J_PER_KWH as JOULES_PER_KWH

CREDIT = "each hit credited with the measured mean energy of a miss"
FIELDS = ("hits", "misses", "measured_misses", "miss_energy_j", "miss_energy_sq_j2",
          "miss_uncertainty_j", "bypasses")  # fmt: skip


class StatsStore(Protocol):
    """Where the counters live (both cache backends are one)."""

    def add_stats(self, deltas: dict[str, float]) -> None:
        """Add to the counters."""
        ...

    def read_stats(self) -> dict[str, float]:
        """The counters."""
        ...


@dataclass(frozen=True)
class CacheStats:
    """Hit rate and what the hits saved; ``None`` where it cannot be known.

    ``bypasses``: lookups answered without the cache while its store was down.
    ``backend_up`` and ``outages`` are this process's view of the store;
    ``stale``: the store could not be read, the counters are the last read
    plus this process's since.
    """

    hits: int
    misses: int
    measured_misses: int = 0
    miss_energy_j: float = 0.0
    miss_energy_sq_j2: float = 0.0
    miss_uncertainty_j: float = 0.0
    price_usd_per_kwh: float | None = None
    bypasses: int = 0
    backend_up: bool = True
    outages: int = 0
    stale: bool = False

    @classmethod
    def from_counters(
        cls, counters: dict[str, float], price_usd_per_kwh: float | None = None
    ) -> CacheStats:
        """From the counters a backend holds."""
        c = {name: counters.get(name, 0.0) for name in FIELDS}
        return cls(
            int(c["hits"]),
            int(c["misses"]),
            int(c["measured_misses"]),
            c["miss_energy_j"],
            c["miss_energy_sq_j2"],
            c["miss_uncertainty_j"],
            price_usd_per_kwh,
            bypasses=int(c["bypasses"]),
        )

    @property
    def lookups(self) -> int:
        return self.hits + self.misses

    @property
    def hit_rate(self) -> float | None:
        return self.hits / self.lookups if self.lookups else None

    @property
    def mean_miss_energy_j(self) -> float | None:
        """Measured mean energy of a miss; ``None`` before any miss was measured."""
        return self.miss_energy_j / self.measured_misses if self.measured_misses else None

    @property
    def energy_saved_j(self) -> float | None:
        mean = self.mean_miss_energy_j
        return None if mean is None else self.hits * mean

    @property
    def energy_saved_uncertainty_rel(self) -> float | None:
        """Standard error of the mean miss energy and its measurement uncertainty, combined."""
        mean = self.mean_miss_energy_j
        n = self.measured_misses
        if mean is None or mean <= 0:
            return None
        if n < 2:
            spread = 1.0  # one miss says nothing about the spread
        else:
            variance = max(0.0, (self.miss_energy_sq_j2 - n * mean * mean) / (n - 1))
            spread = math.sqrt(variance / n) / mean
        measured = self.miss_uncertainty_j / self.miss_energy_j if self.miss_energy_j else 0.0
        return min(1.0, math.hypot(spread, measured))

    @property
    def usd_saved(self) -> float | None:
        saved = self.energy_saved_j
        if saved is None or self.price_usd_per_kwh is None:
            return None
        return saved / JOULES_PER_KWH * self.price_usd_per_kwh

    def to_dict(self) -> dict[str, Any]:
        saved = self.energy_saved_j
        return {
            "hits": self.hits,
            "misses": self.misses,
            "hit_rate": self.hit_rate,
            "measured_misses": self.measured_misses,
            "mean_miss_energy_j": self.mean_miss_energy_j,
            "energy_saved_j": saved,
            "energy_saved_kwh": None if saved is None else saved / JOULES_PER_KWH,
            "energy_saved_uncertainty_rel": self.energy_saved_uncertainty_rel,
            "price_usd_per_kwh": self.price_usd_per_kwh,
            "usd_saved": self.usd_saved,
            "bypasses": self.bypasses,
            "backend_up": self.backend_up,
            "outages": self.outages,
            "stale": self.stale,
            "method": CREDIT,
        }


class StatsRecorder:
    """Counts hits, misses and miss energies locally; adds them to a store in batches.

    :meth:`totals` are this process's own counts since it started (for
    Prometheus counters); they never touch the store.
    """

    def __init__(
        self,
        store: StatsStore,
        *,
        flush_every_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._every = flush_every_s
        self._clock = clock
        self._lock = threading.Lock()
        self._local: dict[str, float] = {}
        self._totals: dict[str, float] = {}
        self._last_read: dict[str, float] = {}  # the store's counters, last read
        self._since_read: dict[str, float] = {}  # what this process added since
        self._flushed_at = clock()

    def hit(self) -> None:
        self._add({"hits": 1.0})

    def miss(self) -> None:
        self._add({"misses": 1.0})

    def bypass(self) -> None:
        """A lookup answered without the cache: its store was unreachable."""
        self._add({"bypasses": 1.0})

    def miss_energy(self, energy_j: float, uncertainty_rel: float = 0.0) -> None:
        """One miss's measured energy (what computing the answer cost)."""
        self._add({
            "measured_misses": 1.0,
            "miss_energy_j": energy_j,
            "miss_energy_sq_j2": energy_j * energy_j,
            "miss_uncertainty_j": energy_j * uncertainty_rel,
        })  # fmt: skip

    def _add(self, deltas: dict[str, float]) -> None:
        with self._lock:
            _add_to(self._local, deltas)
            _add_to(self._totals, deltas)
            due = self._clock() - self._flushed_at >= self._every
        if due:
            self.flush()

    def flush(self) -> bool:
        """Add the local counts to the store now; False if it is unreachable (kept for later)."""
        with self._lock:
            local, self._local = self._local, {}
            self._flushed_at = self._clock()
        if not local:
            return True
        try:
            self._store.add_stats(local)
        except CacheUnavailable:
            with self._lock:
                _add_to(self._local, local)
            return False
        with self._lock:
            _add_to(self._since_read, local)
        return True

    def totals(self) -> dict[str, float]:
        """This process's counts since it started (hits, misses, bypasses ...)."""
        with self._lock:
            return dict(self._totals)

    def read(self, price_usd_per_kwh: float | None = None) -> CacheStats:
        """Flush, then the store's counters (every process's, for a shared store).

        With the store unreachable: the last counters read plus this process's
        counts since, marked ``stale``.
        """
        counters: dict[str, float] | None = None
        if self.flush():
            with contextlib.suppress(CacheUnavailable):
                counters = self._store.read_stats()
        if counters is None:
            with self._lock:
                counters = dict(self._last_read)
                _add_to(counters, self._since_read)
                _add_to(counters, self._local)
            return replace(CacheStats.from_counters(counters, price_usd_per_kwh), stale=True)
        with self._lock:
            self._last_read, self._since_read = dict(counters), {}
        return CacheStats.from_counters(counters, price_usd_per_kwh)


def _add_to(counters: dict[str, float], deltas: dict[str, float]) -> None:
    for name, delta in deltas.items():
        counters[name] = counters.get(name, 0.0) + delta

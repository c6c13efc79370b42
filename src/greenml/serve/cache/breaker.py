"""Fail open: stop calling a cache store that is down, and retry it with backoff.

A :class:`Breaker` guards every call to a remote store. The first failed call
starts an *outage*: one warning is logged, and every call for the next
``backoff_s`` raises :class:`CacheUnavailable` at once, without touching the
store. Then one call (one thread) probes it: a failure doubles the wait (up
to ``max_backoff_s``), a success ends the outage (logged once, at INFO). So
a dead store costs one timeout per probe, not one per request, and the caches
above it (:mod:`greenml.serve.cache.response`) answer without it meanwhile.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from greenml.errors import CacheUnavailable, ConfigError

log = logging.getLogger("greenml.serve.cache")


@dataclass(frozen=True)
class Health:
    """A store's availability, as this process saw it."""

    up: bool
    outages: int  # outages begun
    failed_calls: int  # calls that reached the store and failed
    skipped_calls: int  # calls refused without touching the store (backing off)
    down_for_s: float | None = None  # how long the current outage has lasted
    retry_in_s: float | None = None  # until the next probe


class Breaker:
    """A circuit breaker with exponential backoff around one store.

    Args:
        name: What the store is, for messages (``Redis at host:port``).
        errors: The exceptions that mean the store is unreachable; others pass through.
        backoff_s: Wait after the first failure before probing again.
        max_backoff_s: The longest wait between probes.
        clock: Monotonic clock.
    """

    def __init__(
        self,
        name: str,
        errors: tuple[type[BaseException], ...],
        *,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 < backoff_s <= max_backoff_s:
            raise ConfigError(
                f"need 0 < backoff_s <= max_backoff_s, got {backoff_s} and {max_backoff_s}"
            )
        self.name = name
        self._errors = errors
        self._base = backoff_s
        self._max = max_backoff_s
        self._clock = clock
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._retry_at = 0.0
        self._delay = backoff_s
        self._probing = False
        self._outages = 0
        self._failed = 0
        self._skipped = 0

    @contextmanager
    def call(self) -> Iterator[None]:
        """Guard one call: raises CacheUnavailable at once while backing off, or if it fails."""
        probe = self._admit()
        try:
            yield
        except self._errors as exc:
            detail = " ".join(str(exc).split()) or type(exc).__name__
            self._failed_call(detail, probe)
            raise CacheUnavailable(f"{self.name} is unreachable: {detail}") from None
        except BaseException:
            self._release(probe)  # the store answered; the error is the caller's
            raise
        self._succeeded(probe)

    def health(self) -> Health:
        """Up or down, and the counts so far."""
        with self._lock:
            now = self._clock()
            down = self._down_since
            return Health(
                up=down is None,
                outages=self._outages,
                failed_calls=self._failed,
                skipped_calls=self._skipped,
                down_for_s=None if down is None else now - down,
                retry_in_s=None if down is None else max(0.0, self._retry_at - now),
            )

    # ------------------------------------------------------------ state

    def _admit(self) -> bool:
        """Whether this call may go ahead; True if it is the probe of an outage."""
        with self._lock:
            if self._down_since is None:
                return False
            now = self._clock()
            if self._probing or now < self._retry_at:
                self._skipped += 1
                wait = max(0.0, self._retry_at - now)
                raise CacheUnavailable(f"{self.name} is unreachable (next try in {wait:.1f} s)")
            self._probing = True
            return True

    def _release(self, probe: bool) -> None:
        if probe:
            with self._lock:
                self._probing = False

    def _failed_call(self, detail: str, probe: bool) -> None:
        with self._lock:
            now = self._clock()
            self._failed += 1
            if probe:
                self._probing = False
                self._delay = min(self._delay * 2, self._max)
            elif self._down_since is not None:
                return  # a call admitted before the outage began: already counted
            else:
                self._down_since = now
                self._delay = self._base
                self._outages += 1
                log.warning(
                    "%s is unreachable (%s): answering without the cache, "
                    "retrying in %.1f s then backing off up to %.0f s",
                    self.name, detail, self._delay, self._max,
                )  # fmt: skip
            self._retry_at = now + self._delay

    def _succeeded(self, probe: bool) -> None:
        if not probe:
            return
        with self._lock:
            self._probing = False
            down, self._down_since = self._down_since, None
            self._delay = self._base
        if down is not None:
            log.info("%s is back after %.1f s", self.name, self._clock() - down)

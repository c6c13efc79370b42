"""DynamicBatcher: gather single requests into batches for a model that prefers them.

Requests queue up; a worker thread runs ``fn(items)`` on a batch when it is
full (``max_batch``) or when its oldest request has waited ``max_wait_ms``.
Each caller gets its own result back, from a thread (``__call__``), a
``concurrent.futures.Future`` (:meth:`DynamicBatcher.submit`) or a coroutine
(:meth:`DynamicBatcher.asubmit`). If ``fn`` raises, only the callers of that
batch get the error; a result that is an exception goes to its caller alone.
See :mod:`greenml.serve.batch_curve` to choose ``max_batch`` and ``max_wait_ms``.

Lazy imports: asyncio (~50 ms) is imported inside the functions that use it, so
importing this module stays cheap.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from greenml.errors import BatcherClosed, ConfigError

log = logging.getLogger("greenml")

_STOP = object()


@dataclass
class BatchStats:
    """What the batcher did: batches run, by size and by why they were flushed."""

    batches: int = 0
    items: int = 0
    full: int = 0  # flushed because max_batch was reached
    timed_out: int = 0  # flushed because the oldest request waited max_wait_ms
    failed: int = 0
    sizes: dict[int, int] = field(default_factory=dict)

    @property
    def mean_batch(self) -> float:
        return self.items / self.batches if self.batches else 0.0


class DynamicBatcher:
    """Runs ``fn`` on batches of up to ``max_batch`` requests, waiting at most ``max_wait_ms``.

    Args:
        fn: ``items → results``, one result per item, in order.
        max_batch: Largest batch.
        max_wait_ms: Longest the oldest queued request waits for company.
        name: Name of the worker thread.
        clock: Monotonic clock (seconds).
    """

    def __init__(
        self,
        fn: Callable[[list[Any]], Sequence[Any]],
        max_batch: int = 8,
        max_wait_ms: float = 5.0,
        *,
        name: str = "greenml-batcher",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_batch < 1:
            raise ConfigError(f"max_batch must be >= 1, got {max_batch}")
        if not max_wait_ms >= 0:
            raise ConfigError(f"max_wait_ms must be >= 0, got {max_wait_ms}")
        self.fn = fn
        self.max_batch = max_batch
        self.max_wait_s = max_wait_ms / 1000.0
        self.stats = BatchStats()
        self._clock = clock
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._closed = False
        self._lock = threading.Lock()
        self._worker = threading.Thread(target=self._run, name=name, daemon=True)
        self._worker.start()

    def submit(self, item: Any) -> Future[Any]:
        """Queue one request; its result (or error) arrives on the future."""
        future: Future[Any] = Future()
        with self._lock:
            if self._closed:
                raise BatcherClosed("the batcher is closed")
            self._queue.put((self._clock(), item, future))
        return future

    def __call__(self, item: Any, timeout_s: float | None = None) -> Any:
        """Queue one request and wait for its result."""
        return self.submit(item).result(timeout_s)

    async def asubmit(self, item: Any) -> Any:
        """Queue one request from a coroutine and await its result."""
        import asyncio

        return await asyncio.wrap_future(self.submit(item))

    def _run(self) -> None:
        get = self._queue.get
        while True:
            first = get()
            if first is _STOP:
                return
            batch = [first]
            deadline = first[0] + self.max_wait_s
            stop = False
            while len(batch) < self.max_batch:
                remaining = deadline - self._clock()
                try:
                    entry = get(timeout=remaining) if remaining > 0 else get(block=False)
                except queue.Empty:
                    break
                if entry is _STOP:
                    stop = True
                    break
                batch.append(entry)
            self._execute(batch)
            if stop:
                self._drain()
                return

    def _execute(self, batch: list[tuple[float, Any, Future[Any]]]) -> None:
        stats = self.stats
        stats.batches += 1
        stats.items += len(batch)
        stats.sizes[len(batch)] = stats.sizes.get(len(batch), 0) + 1
        if len(batch) == self.max_batch:
            stats.full += 1
        else:
            stats.timed_out += 1
        futures = [f for _, _, f in batch if f.set_running_or_notify_cancel()]
        items = [item for _, item, f in batch if f.running()]
        if not futures:
            return
        try:
            results = list(self.fn(items))
            if len(results) != len(items):
                raise ConfigError(
                    f"the batch function returned {len(results)} results for {len(items)} items"
                )
        except BaseException as exc:  # routed to this batch's callers only
            stats.failed += 1
            for future in futures:
                future.set_exception(exc)
            return
        for future, result in zip(futures, results, strict=True):
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(result)

    def _drain(self) -> None:
        """After close: fail whatever is still queued (nothing waits forever)."""
        while True:
            try:
                entry = self._queue.get(block=False)
            except queue.Empty:
                return
            if entry is not _STOP and entry[2].set_running_or_notify_cancel():
                entry[2].set_exception(BatcherClosed("the batcher closed before this request ran"))

    def close(self, timeout_s: float = 5.0) -> None:
        """Run what is queued, then stop the worker."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(_STOP)
        self._worker.join(timeout_s)

    def __enter__(self) -> DynamicBatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

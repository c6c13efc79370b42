"""DynamicBatcher: flush on size, flush on wait, results and errors routed to their callers."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from greenml.errors import BatcherClosed, ConfigError
from greenml.serve.batching import DynamicBatcher


def test_flush_when_full() -> None:
    seen: list[list[int]] = []
    release = threading.Event()

    def model(items: list[int]) -> list[int]:
        seen.append(items)
        return [x * 10 for x in items]

    # a wait far longer than the test: only a full batch can flush
    with DynamicBatcher(model, max_batch=4, max_wait_ms=60_000) as batcher:
        futures = [batcher.submit(i) for i in range(4)]
        assert [f.result(timeout=5) for f in futures] == [0, 10, 20, 30]
        release.set()
        assert seen == [[0, 1, 2, 3]]
        assert (batcher.stats.full, batcher.stats.timed_out) == (1, 0)


def test_flush_when_the_oldest_waited_long_enough() -> None:
    seen: list[list[str]] = []

    def model(items: list[str]) -> list[str]:
        seen.append(items)
        return [s.upper() for s in items]

    with DynamicBatcher(model, max_batch=100, max_wait_ms=50) as batcher:
        futures = [batcher.submit(s) for s in ("a", "b", "c")]
        assert [f.result(timeout=5) for f in futures] == ["A", "B", "C"]
        # never full: every batch was flushed by the wait, and nothing was lost or repeated
        assert batcher.stats.full == 0 and batcher.stats.timed_out >= 1
        assert sorted(x for batch in seen for x in batch) == ["a", "b", "c"]


def test_errors_go_to_that_batch_only() -> None:
    def model(items: list[str]) -> list[object]:
        if "crash" in items:
            raise RuntimeError("CUDA out of memory")
        return [ValueError(f"bad input {s}") if s.startswith("bad") else s for s in items]

    with DynamicBatcher(model, max_batch=2, max_wait_ms=60_000) as batcher:
        first = [batcher.submit("ok1"), batcher.submit("crash")]
        for future in first:
            with pytest.raises(RuntimeError, match="out of memory"):
                future.result(timeout=5)
        second = [batcher.submit("ok2"), batcher.submit("bad3")]
        assert second[0].result(timeout=5) == "ok2"  # the next batch is unaffected
        with pytest.raises(ValueError, match="bad input bad3"):
            second[1].result(timeout=5)  # a per-item error reaches its caller alone
        assert batcher.stats.failed == 1


def test_wrong_number_of_results() -> None:
    with DynamicBatcher(lambda items: items[:1], max_batch=2, max_wait_ms=60_000) as batcher:
        futures = [batcher.submit(1), batcher.submit(2)]
        for future in futures:
            with pytest.raises(ConfigError, match="1 results for 2 items"):
                future.result(timeout=5)


def test_threads_and_coroutines_share_batches() -> None:
    sizes: list[int] = []

    def model(items: list[int]) -> list[int]:
        sizes.append(len(items))
        return [x + 1 for x in items]

    with DynamicBatcher(model, max_batch=8, max_wait_ms=20) as batcher:
        with ThreadPoolExecutor(4) as pool:
            assert list(pool.map(batcher, range(20))) == list(range(1, 21))

        async def many() -> list[int]:
            return list(await asyncio.gather(*(batcher.asubmit(i) for i in range(10))))

        assert asyncio.run(many()) == list(range(1, 11))
    assert sum(sizes) == 30 and max(sizes) <= 8


def test_close_runs_what_is_queued_then_refuses() -> None:
    gate = threading.Event()

    def slow(items: list[int]) -> list[int]:
        gate.wait(5)
        return items

    batcher = DynamicBatcher(slow, max_batch=1, max_wait_ms=0)
    futures = [batcher.submit(i) for i in range(3)]
    gate.set()
    batcher.close()
    assert [f.result(timeout=5) for f in futures] == [0, 1, 2]
    with pytest.raises(BatcherClosed):
        batcher.submit(9)


def test_bad_settings() -> None:
    with pytest.raises(ConfigError):
        DynamicBatcher(lambda items: items, max_batch=0)
    with pytest.raises(ConfigError):
        DynamicBatcher(lambda items: items, max_wait_ms=-1)

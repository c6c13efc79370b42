"""Requests in flight, the work each did per sampling interval, and their settlement.

The request path only notes times: arrival, each streamed chunk, end (and the
usage block). A ticker (:meth:`Ledger.tick`, called by :class:`Ticker` at the
sampling rate) reads the energy source's running total and closes an interval
``[previous tick, now)`` with the requests that were in flight during it.

An interval is *settled* once every request in it has ended (its token counts
are final): :func:`greenml.llm.attribution.split_interval` shares its energy
by each request's work in it. A request's figure is final when all its
intervals are settled, i.e. when every request that overlapped it has ended.
Until then the response carries a *provisional* figure: the intervals it has
seen shared by the work known at each tick, plus its share of the last
interval's power until its end, labelled ``provisional`` (see the LLM serving
docs). Nothing on the request path waits for the meter.

Work of request r in [a, b): prefill = its prompt tokens spread evenly from
arrival to first token (non-streamed: arrival to end); decode = its streamed
chunks with times in [a, b), scaled to the usage block's completion tokens
(non-streamed: spread evenly over the request).
"""

from __future__ import annotations

import bisect
import itertools
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from greenml.llm.attribution import split_interval
from greenml.llm.floor import IdleFloor
from greenml.llm.ratio import RatioEstimator

log = logging.getLogger("greenml")

RUNNING, COMPLETED, CANCELLED, ERROR, UNAVAILABLE = (
    "running", "completed", "cancelled", "error", "unavailable",
)  # fmt: skip


class EnergySource(Protocol):
    """A running energy total of the devices that serve (a Meter window, or a fake)."""

    method: str
    uncertainty_rel: float
    scope: str

    def total_j(self) -> float:
        """Joules since the source opened."""
        ...


@dataclass(eq=False)
class Request:
    """One proxied request: times (monotonic seconds), tokens, and its energy so far."""

    id: str
    endpoint: str
    model: str | None
    tenant: str | None
    stream: bool
    arrival_s: float
    wall_s: float
    prompt_estimate: int
    first_token_s: float | None = None
    end_s: float | None = None
    chunk_times: list[float] = field(default_factory=list)  # monotonic, in arrival order
    chunk_cum: list[int] = field(default_factory=list)  # tokens streamed up to each chunk
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    token_source: str = "estimated"
    status: str = RUNNING
    # energy, written by the ticker thread only
    prefill_j: float = 0.0
    decode_j: float = 0.0
    queued_j: float = 0.0
    attribution_j: float = 0.0  # attribution uncertainty (ratio ± spread), summed
    provisional_j: float = 0.0  # shares at tick time, with the work then known
    provisional_prefill_j: float = 0.0
    provisional_static_j: float = 0.0
    response_prefill_j: float = 0.0
    response_static_j: float = 0.0
    static_j: float = 0.0  # its share of the idle floor (see greenml.llm.floor)
    last_share: float = 0.0  # share of the last interval it was in
    open_intervals: int = 0
    ended_pending: bool = False  # ended, not yet in an interval (set under the lock)
    response_j: float | None = None  # the provisional figure the response carried
    ratio: float = 0.0
    ratio_spread: float = 0.0

    @property
    def energy_j(self) -> float:
        return self.prefill_j + self.decode_j + self.queued_j

    @property
    def dynamic_j(self) -> float:
        """What serving it added above the idle floor."""
        return max(0.0, self.energy_j - self.static_j)

    def note_chunk(self, now_s: float, tokens: int) -> None:
        """A streamed chunk arrived (tokens: of generated text in it)."""
        if tokens and self.first_token_s is None:
            self.first_token_s = now_s
        if tokens:
            self.chunk_times.append(now_s)
            self.chunk_cum.append((self.chunk_cum[-1] if self.chunk_cum else 0) + tokens)

    @property
    def streamed_tokens(self) -> int:
        """Generated tokens counted in the stream so far."""
        return self.chunk_cum[-1] if self.chunk_cum else 0

    def _streamed_between(self, a: float, b: float, end: float) -> int:
        """Tokens of chunks with times in [a, b) (and at b when b is the end): O(log n)."""
        lo = bisect.bisect_left(self.chunk_times, a)
        hi = bisect.bisect_right if b == end else bisect.bisect_left
        top = hi(self.chunk_times, b)
        if top <= lo:
            return 0
        return self.chunk_cum[top - 1] - (self.chunk_cum[lo - 1] if lo else 0)

    def work(self, a: float, b: float, now_s: float) -> tuple[float, float, float]:
        """(prefill tokens, decode tokens, seconds in flight) in [a, b), as known at ``now_s``."""
        end = self.end_s if self.end_s is not None else now_s
        start = self.arrival_s
        presence = max(0.0, min(b, end) - max(a, start))
        prompt = self.prompt_tokens if self.prompt_tokens is not None else self.prompt_estimate
        streamed = self.stream and bool(self.chunk_times)
        prefill_end = self.first_token_s if streamed and self.first_token_s else end
        prefill = _spread(prompt, start, prefill_end, a, b)
        if streamed:
            counted = self.streamed_tokens
            scale = 1.0
            if self.completion_tokens is not None and counted:
                scale = self.completion_tokens / counted
            decode = scale * self._streamed_between(a, b, end)
        else:
            decode = _spread(self.completion_tokens or 0, start, end, a, b)
        return prefill, decode, presence


def _spread(tokens: float, start: float, end: float, a: float, b: float) -> float:
    """``tokens`` spread evenly over [start, end], the part in [a, b)."""
    if tokens <= 0:
        return 0.0
    if end <= start:
        return float(tokens) if a <= start < b or (start == end == b) else 0.0
    return tokens * max(0.0, min(b, end) - max(a, start)) / (end - start)


@dataclass(eq=False)
class Interval:
    """Energy metered between two ticks and the requests in flight during it."""

    start_s: float
    end_s: float
    energy_j: float
    members: list[Request]


@dataclass
class Totals:
    """Every joule the ledger has seen, by where it went."""

    metered_j: float = 0.0
    attributed_j: float = 0.0
    idle_j: float = 0.0
    pending_j: float = 0.0  # metered, in intervals not settled yet

    @property
    def conservation_error_j(self) -> float:
        return self.metered_j - (self.attributed_j + self.idle_j + self.pending_j)


Settled = Callable[[Request], None]
IdleSink = Callable[[float, float, float], None]  # start wall s, end wall s, joules


class Ledger:
    """Intervals and requests; settles intervals as their requests end.

    Args:
        source: The running energy total (a Meter window on the serving devices).
        on_settled: Called (in the ticker thread) with each request once final.
        on_idle: Called with the idle energy of each settled interval without requests.
        ratio: The prefill/decode cost ratio estimator.
        clock: Monotonic clock; ``wall_offset`` turns it into Unix time.
    """

    def __init__(
        self,
        source: EnergySource,
        *,
        on_settled: Settled | None = None,
        on_idle: IdleSink | None = None,
        ratio: RatioEstimator | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.source = source
        self.ratio = ratio or RatioEstimator()
        self.floor = IdleFloor()
        self._on_settled = on_settled
        self._on_idle = on_idle
        self.clock = clock
        self.wall_offset = wall_clock() - clock()
        self._ids = itertools.count(1)
        self._prefix = f"{int(wall_clock()):x}"
        self._active: set[Request] = set()
        self._ended: list[Request] = []
        self._lock = threading.Lock()  # request path vs ticker, held briefly
        self._intervals: list[Interval] = []
        self._last_tick = clock()
        self._last_total = source.total_j()
        self._last_power_w = 0.0
        self.totals = Totals()

    # ----------------------------------------------------------- request path

    def begin(
        self,
        endpoint: str,
        model: str | None,
        tenant: str | None,
        stream: bool,
        prompt_estimate: int,
    ) -> Request:
        """A request arrived."""
        now = self.clock()
        req = Request(
            f"{self._prefix}-{next(self._ids)}", endpoint, model, tenant, stream, now,
            now + self.wall_offset, prompt_estimate,
        )  # fmt: skip
        with self._lock:
            self._active.add(req)
        return req

    def discard(self, req: Request) -> None:
        """Forget a request that never reached the engine (its time counts as idle)."""
        with self._lock:
            self._active.discard(req)

    def finish(self, req: Request, status: str = COMPLETED) -> float:
        """A request ended; returns its provisional energy (what the response can carry)."""
        now = self.clock()
        with self._lock:
            if req.end_s is not None:
                return req.response_j or 0.0
            if req.prompt_tokens is None and req.completion_tokens is None and req.chunk_times:
                req.completion_tokens = req.streamed_tokens
                req.token_source = "counted"
            req.status = status
            req.ended_pending = True
            req.end_s = now
            self._active.discard(req)
            self._ended.append(req)
            tail = max(0.0, now - max(self._last_tick, req.arrival_s))
            share = req.last_share if req.open_intervals else 1.0 / (1 + len(self._active))
            req.response_j = req.provisional_j + self._last_power_w * tail * share
            req.response_prefill_j = req.provisional_prefill_j
            tail_static = self.floor.static_j(tail, self._last_power_w * tail) * share
            req.response_static_j = min(req.response_j, req.provisional_static_j + tail_static)
        return req.response_j

    # ----------------------------------------------------------------- ticker

    def tick(self) -> None:
        """Close the interval since the last tick and settle what can be settled."""
        total = self.source.total_j()
        now = self.clock()
        with self._lock:
            start = self._last_tick
            members = [*self._active, *self._ended]
            for req in self._ended:
                req.ended_pending = False
            self._ended = []
            self._last_tick = now
        energy = total - self._last_total
        self._last_total = total
        if now > start:
            self._last_power_w = energy / (now - start)
        self.totals.metered_j += energy
        interval = Interval(start, now, energy, members)
        self._provisional(interval)
        if members:
            self._intervals.append(interval)
            self.totals.pending_j += energy
            for req in members:
                req.open_intervals += 1
        else:
            self._idle(interval)
        self._settle()

    def _provisional(self, interval: Interval) -> None:
        if not interval.members:
            return
        ratio = self.ratio.current().estimate
        work = [r.work(interval.start_s, interval.end_s, interval.end_s) for r in interval.members]
        split = split_interval(
            interval.energy_j, [w[0] for w in work], [w[1] for w in work], ratio,
            presence=[w[2] for w in work],
        )  # fmt: skip
        e = interval.energy_j
        static = self.floor.static_j(interval.end_s - interval.start_s, e)
        for i, req in enumerate(interval.members):
            share_j = split.energy_j(i)
            req.provisional_j += share_j
            req.provisional_prefill_j += split.prefill_j[i]
            req.provisional_static_j += static * share_j / e if e > 0 else 0.0
            req.last_share = share_j / e if e > 0 else 1.0 / len(interval.members)

    def _idle(self, interval: Interval) -> None:
        self.totals.idle_j += interval.energy_j
        self.floor.add(interval.end_s - interval.start_s, interval.energy_j)
        if self._on_idle is not None and interval.energy_j:
            off = self.wall_offset
            self._on_idle(interval.start_s + off, interval.end_s + off, interval.energy_j)

    def _settle(self) -> None:
        keep: list[Interval] = []
        for interval in self._intervals:
            if all(r.end_s is not None for r in interval.members):
                self._settle_one(interval)
            else:
                keep.append(interval)
        self._intervals = keep

    def _settle_one(self, interval: Interval) -> None:
        estimate = self.ratio.current()
        ratio, spread = estimate.estimate, estimate.spread
        a, b, e = interval.start_s, interval.end_s, interval.energy_j
        work = [r.work(a, b, b) for r in interval.members]
        pre, dec, pres = [w[0] for w in work], [w[1] for w in work], [w[2] for w in work]
        split = split_interval(e, pre, dec, ratio, presence=pres)
        lo = split_interval(e, pre, dec, max(ratio - spread, ratio / 10), presence=pres)
        hi = split_interval(e, pre, dec, ratio + spread, presence=pres)
        self.totals.pending_j -= e
        self.totals.attributed_j += e
        self.ratio.add(b - a, sum(pre), sum(dec), e)
        static = self.floor.static_j(b - a, e)
        for i, req in enumerate(interval.members):
            req.prefill_j += split.prefill_j[i]
            req.decode_j += split.decode_j[i]
            req.queued_j += split.queued_j[i]
            mid = split.energy_j(i)
            req.static_j += static * mid / e if e > 0 else 0.0
            req.attribution_j += max(abs(lo.energy_j(i) - mid), abs(hi.energy_j(i) - mid))
            req.ratio, req.ratio_spread = ratio, spread
            req.open_intervals -= 1
            if req.open_intervals == 0 and not req.ended_pending and self._on_settled:
                try:
                    self._on_settled(req)
                except Exception as exc:  # a sink's failure never stops the ledger
                    log.warning("greenml: storing an LLM request failed: %s", exc)

    def settle_all(self) -> None:
        """At shutdown: end every request still open (cancelled) and settle everything."""
        for req in list(self._active):
            self.finish(req, CANCELLED)
        self.tick()

    @property
    def in_flight(self) -> int:
        """Requests open, or ended and not yet in an interval."""
        return len(self._active) + len(self._ended)

    @property
    def unsettled_intervals(self) -> int:
        return len(self._intervals)


def uncertainty_j(req: Request, device_rel: float) -> float:
    """A request's uncertainty: the devices' (relative) and the attribution's, in quadrature."""
    return math.hypot(req.energy_j * device_rel, req.attribution_j)


class Ticker:
    """Calls :meth:`Ledger.tick` every ``period_s`` from a daemon thread."""

    def __init__(self, ledger: Ledger, period_s: float) -> None:
        self._ledger = ledger
        self._period = period_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="greenml-llm-ticker", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        next_at = time.monotonic() + self._period
        while not self._stop.wait(max(0.0, next_at - time.monotonic())):
            try:
                self._ledger.tick()
            except Exception as exc:  # the ticker must not die
                log.warning("greenml: LLM ledger tick failed: %r", exc)
            next_at = max(next_at + self._period, time.monotonic())

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

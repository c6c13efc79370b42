"""RequestMeter: energy per request for a server, cheap on the request path.

A request costs two clock reads, a dict insert and pop and a deque append
(:meth:`RequestMeter.begin` / :meth:`RequestMeter.finish`). The attribution
itself (:func:`greenml.serve.attribution.attribute_energy`) runs later in
batches (:meth:`RequestMeter.settle`), from a background thread, a report or a
Prometheus scrape, once the Meter's power samples cover the finished requests.

Figures are ``power-integrated`` (or ``estimated`` when a device's power is a
model): sampled power shared by time overlap among the requests in flight.
Their uncertainty combines the devices' own with the sampling error, which
dominates requests shorter than a few sample periods.

A settle reads only the samples from the earliest unsettled request (or the end
of the last settled span) on (``Meter.timeline(key, since_s)``), and then tells
the Meter it may forget the samples before that time (``Meter.forget_before``,
as a named holder released on :meth:`RequestMeter.close`): its cost and the
Meter's memory follow the requests in flight, not the server's uptime.

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import itertools
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError
from greenml.measure.measurement import COUNTER, POWER_INTEGRATED, weakest_method
from greenml.measure.meter import Meter
from greenml.serve.attribution import Interpolation, attribute_energy
from greenml.serve.request_report import RouteEnergy, ServingReport, SettledRequest

if TYPE_CHECKING:
    from greenml.measure.meter import Meter

log = logging.getLogger("greenml")

Clock = Callable[[], float]
Interval = tuple[str, float, float]  # route, start, end (Unix seconds)

__all__ = ["RequestMeter", "RouteEnergy", "ServingReport", "SettledRequest"]


class RequestMeter:
    """Records request intervals and charges each one its share of the measured power.

    Args:
        meter: The Meter whose power timelines are shared out; ``None`` opens
            one on this machine's sensors (closed with this object).
        sample_hz: Sampling rate of the Meter opened here (ignored with ``meter``).
        devices: Device keys or components (``gpu``, ``cpu`` ...) to charge;
            default: every device of the Meter.
        settle_every_s: Period of the background thread that settles finished
            requests; 0: settle only on :meth:`settle`, :meth:`report` or a scrape.
        guard_s: Settle only requests that ended this long ago, so a request
            that began concurrently with a settle is never missed.
        interpolation: Power between samples: ``linear`` (the Meter's trapezoid)
            or ``step``.
        clock: Monotonic clock of the request intervals (the Meter's clock).
        wall_clock: Unix clock (the Meter's), to line intervals up with samples.
    """

    def __init__(
        self,
        meter: Meter | None = None,
        *,
        sample_hz: float = 10.0,
        devices: Sequence[str] | None = None,
        settle_every_s: float = 1.0,
        guard_s: float = 0.05,
        interpolation: Interpolation = "linear",
        clock: Clock = time.monotonic,
        wall_clock: Clock = time.time,
    ) -> None:
        if not settle_every_s >= 0 or not guard_s >= 0:
            raise ConfigError("settle_every_s and guard_s must be >= 0")
        self._owned = meter is None
        if meter is None:
            meter = Meter(sample_hz=sample_hz)
        self.meter = meter
        wanted = set(devices) if devices is not None else None
        chosen = [d for d in meter.devices if wanted is None or {d.key, d.component} & wanted]
        if not chosen:
            raise ConfigError(f"no device of the Meter matches {sorted(wanted or [])}")
        self.devices = tuple(d.key for d in chosen)
        methods: list[str] = [POWER_INTEGRATED if d.method == COUNTER else d.method for d in chosen]
        self.method = weakest_method(methods)
        self._device_rel = max(d.uncertainty_rel for d in chosen)
        self._interpolation: Interpolation = interpolation
        self._guard_s = guard_s
        self._clock = clock
        self._offset = wall_clock() - clock()
        self._ids = itertools.count()
        self._open: dict[int, tuple[str, float]] = {}
        self._done: deque[tuple[int, str, float, float]] = deque()
        self._pending: list[Interval] = []  # finished, not yet covered by samples
        self._retained: list[Interval] = []  # settled, still overlapping pending/open ones
        self._covered_until: float | None = None
        self._idle_j = 0.0
        self._busy_j = 0.0
        self._totals: dict[str, list[float]] = {}  # route → [requests, J, s, uncertainty J]
        self._finished: dict[str, int] = {}
        self._listeners: list[Callable[[SettledRequest], None]] = []
        self._lock = threading.RLock()
        self._holder = f"greenml.serve.RequestMeter@{id(self):x}"
        self._sample_period_s = math.inf  # achieved sampling period, from the samples last read
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if settle_every_s > 0:
            self._thread = threading.Thread(
                target=self._loop, args=(settle_every_s,), name="greenml-requests", daemon=True
            )
            self._thread.start()

    # ------------------------------------------------------------ request path

    def begin(self, route: str = "") -> int:
        """Note a request's start; returns the token for :meth:`finish`."""
        token = next(self._ids)
        self._open[token] = (route, self._clock())
        return token

    def finish(self, token: int, route: str | None = None) -> None:
        """Note a request's end (``route`` replaces the one given at :meth:`begin`)."""
        opened = self._open.pop(token, None)
        if opened is None:
            return
        self._done.append((token, opened[0] if route is None else route, opened[1], self._clock()))

    @contextmanager
    def request(self, route: str) -> Iterator[None]:
        """``with request_meter.request("embed"): ...``"""
        token = self.begin(route)
        try:
            yield
        finally:
            self.finish(token)

    def add_listener(self, listener: Callable[[SettledRequest], None]) -> None:
        """Call ``listener`` with every request once its energy is known."""
        with self._lock:
            self._listeners.append(listener)

    # ------------------------------------------------------------ settling

    def settle(self) -> int:
        """Charge the finished requests the samples now cover; returns how many."""
        import numpy as np

        with self._lock:
            open_now = self._open.copy()  # before draining: what ends meanwhile is in both
            now = self._clock() + self._offset
            off = self._offset
            while self._done:
                token, route, start, end = self._done.popleft()
                open_now.pop(token, None)
                self._pending.append((route, start + off, end + off))
                self._finished[route] = self._finished.get(route, 0) + 1
            since = self._needed_since(open_now.values())
            lines = [self.meter.timeline(key, since) for key in self.devices]
            if any(len(times) == 0 for times, _ in lines):
                return 0
            horizon = min(min(times[-1] for times, _ in lines), now - self._guard_s)
            first = max(times[0] for times, _ in lines)
            span_start = first if self._covered_until is None else self._covered_until
            ready = [r for r in self._pending if r[2] <= horizon]
            if not ready and horizon <= span_start:
                return 0
            self._pending = [r for r in self._pending if r[2] > horizon]
            opened = [(route, t + off, max(now, t + off)) for route, t in open_now.values()]
            intervals = ready + self._retained + self._pending + opened
            starts = np.array([r[1] for r in intervals], dtype=np.float64)
            ends = np.array([r[2] for r in intervals], dtype=np.float64)
            span = (span_start, max(span_start, horizon))
            energy, idle, busy = self._attribute(lines, starts, ends, span)
            self._idle_j += idle
            self._busy_j += busy
            self._covered_until = span[1]
            if len(lines[0][0]) >= 2:  # else the last estimate: a short read says little
                self._sample_period_s = _period_s(lines[0][0])
            self._record(ready, energy[: len(ready)].tolist(), self._sample_period_s)
            later = [r[1] for r in self._pending] + [r[1] for r in opened]
            keep_after = min([*later, now - self._guard_s])
            self._retained = [r for r in self._retained + ready if r[2] > keep_after]
            forget = self._needed_since(open_now.values())
            if forget is not None:
                for key in self.devices:
                    self.meter.forget_before(key, forget - self._guard_s, holder=self._holder)
            return len(ready)

    def _needed_since(self, open_now: Iterable[tuple[str, float]]) -> float | None:
        """Earliest Unix time a settle still needs samples from (``None``: all of them).

        Settled requests kept in ``_retained`` only count requests in flight;
        their energy, which would need older samples, is never read again.
        """
        if self._covered_until is None:
            return None
        off = self._offset
        return min(
            [self._covered_until, *(r[1] for r in self._pending), *(t + off for _, t in open_now)]
        )

    def _attribute(
        self, lines: list[tuple[list[float], list[float]]], starts: Any, ends: Any, span: Any
    ) -> tuple[Any, float, float]:
        """Sum the attribution over devices (one pass when they share sample times)."""
        import numpy as np

        same_times = all(times == lines[0][0] for times, _ in lines[1:])
        if same_times:
            power = np.sum([np.asarray(p, dtype=np.float64) for _, p in lines], axis=0)
            groups = [(lines[0][0], power)]
        else:
            groups = [(t, np.asarray(p, dtype=np.float64)) for t, p in lines]
        energy = np.zeros(len(starts))
        idle = busy = 0.0
        for times, power in groups:
            a = attribute_energy(
                times, power, starts, ends, span_s=span, interpolation=self._interpolation
            )
            energy += a.energy_j
            idle += a.idle_energy_j
            busy += a.busy_energy_j
        return energy, idle, busy

    def _record(self, ready: list[Interval], energies: list[float], period_s: float) -> None:
        listeners = list(self._listeners)
        for (route, start, end), energy_j in zip(ready, energies, strict=True):
            duration = end - start
            sampling = min(1.0, 0.5 * period_s / duration) if duration > 0 else 1.0
            rel = min(1.0, math.hypot(self._device_rel, sampling))
            totals = self._totals.setdefault(route, [0, 0.0, 0.0, 0.0])
            totals[0] += 1
            totals[1] += energy_j
            totals[2] += duration
            totals[3] += energy_j * rel
            if listeners:
                settled = SettledRequest(route, start, duration, energy_j, rel)
                for listener in listeners:
                    try:
                        listener(settled)
                    except Exception as exc:  # a listener must not stop the accounting
                        log.warning("greenml: request listener failed: %r", exc)

    # ------------------------------------------------------------ reading

    def finished_counts(self) -> dict[str, int]:
        """Requests finished per route (settled or not), as of the last settle."""
        with self._lock:
            return dict(self._finished)

    def idle_energy_j(self) -> float:
        """Energy drawn while no request was in flight, as of the last settle."""
        return self._idle_j

    def report(self) -> ServingReport:
        """Settle what the samples cover, then the energy per route."""
        self.settle()
        with self._lock:
            routes = tuple(
                RouteEnergy(route, int(t[0]), t[1], t[2], t[3])
                for route, t in sorted(self._totals.items())
            )
            return ServingReport(
                routes,
                self._idle_j,
                self._busy_j,
                unsettled=len(self._pending) + len(self._done),
                in_flight=len(self._open),
                method=self.method,
                devices=self.devices,
            )

    # ------------------------------------------------------------ lifetime

    def _loop(self, every_s: float) -> None:
        warned = False
        while not self._stop.wait(every_s):
            try:
                self.settle()
            except Exception as exc:  # never kill the server; say it once
                if not warned:
                    log.warning("greenml: settling request energy failed: %r", exc)
                    warned = True

    def close(self) -> None:
        """Stop the background thread, settle once more, close a Meter opened here."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self.settle()
        self.meter.release(self._holder)
        if self._owned:
            self.meter.close()

    def __enter__(self) -> RequestMeter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _period_s(times: list[float]) -> float:
    """Median spacing of the samples (the sampling period actually achieved)."""
    if len(times) < 2:
        return math.inf
    import numpy as np

    return float(np.median(np.diff(np.asarray(times[-1000:], dtype=np.float64))))

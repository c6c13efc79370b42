"""Project a run's total energy, time, carbon and cost from its progress so far.

The model: each unit of work (a step) costs an independent, identically
distributed amount of time and energy with mean ``mu`` and variance
``sigma**2``; setup before the first progress report is a fixed cost. From
``n`` increments of ``ds_i`` steps costing ``dy_i`` (the most recent ones),
the weighted mean ``mu = sum(dy) / sum(ds)`` is the per-step cost and
``s**2 = sum((dy_i - mu ds_i)**2 / ds_i) / (n - 1)`` its variance. The
remaining ``R`` steps then cost ``R mu`` with the prediction variance
``s**2 (R**2 / S + R)`` (``S = sum(ds)``): the uncertainty of ``mu`` plus the
noise of the steps still to come, scaled by Student's t with ``n - 1``
degrees of freedom. The interval is exact for normal step costs and close to
nominal otherwise; it narrows as ``K`` grows (``R`` shrinks, ``S`` grows).
At least two increments (three progress reports) are needed for an interval.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from greenml.errors import ConfigError
from greenml.measure.events import EventReader, window_measurement

RECENT = 200  # increments used for the per-step fit: recent cost, not the warm-up


@dataclass(frozen=True)
class Interval:
    """A projected total and its prediction interval (``low``/``high`` ``None``: too few steps)."""

    value: float
    low: float | None = None
    high: float | None = None

    def scaled(self, factor: float) -> Interval:
        f = factor
        return Interval(
            self.value * f,
            None if self.low is None else self.low * f,
            None if self.high is None else self.high * f,
        )


@dataclass(frozen=True)
class Projection:
    """Where a run stands and what it will have cost at ``total`` steps."""

    step: float
    total: float
    fraction: float
    elapsed_s: float
    energy_j: float  # measured so far
    duration_s: Interval  # of the whole run
    total_energy_j: Interval
    eta_unix_s: float
    increments_used: int
    confidence: float
    co2_g: Interval | None = None
    cost_usd: Interval | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def t_quantile(confidence: float, dof: int) -> float:
    """Two-sided Student-t critical value: ``P(|T| < t) = confidence``."""
    if not 0 < confidence < 1 or dof < 1:
        raise ConfigError("confidence must be in (0, 1) and dof >= 1")
    if dof > 1000:
        from statistics import NormalDist  # a progress report's band only

        return NormalDist().inv_cdf(0.5 + confidence / 2)
    lo, hi = 0.0, 1.0
    while _t_inside(hi, dof) < confidence:
        hi *= 2
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _t_inside(mid, dof) < confidence else (lo, mid)
    return (lo + hi) / 2


def _t_inside(t: float, dof: int) -> float:
    """``P(|T| < t)`` for integer ``dof`` (Abramowitz & Stegun 26.7.3-4)."""
    theta = math.atan(t / math.sqrt(dof))
    s, c = math.sin(theta), math.cos(theta)
    c2 = c * c
    if dof % 2:
        if dof == 1:
            return 2 * theta / math.pi
        term = total = c
        for k in range(2, dof - 1, 2):  # (2·4···k)/(3·5···(k+1)) cos^(k+1)
            term *= c2 * k / (k + 1)
            total += term
        return 2 / math.pi * (theta + s * total)
    term = total = 1.0
    for k in range(1, dof - 2, 2):  # (1·3···k)/(2·4···(k+1)) cos^(k+1)
        term *= c2 * k / (k + 1)
        total += term
    return s * total


def project_sum(
    done: float, increments: Sequence[tuple[float, float]], remaining: float,
    confidence: float = 0.95,
) -> Interval:  # fmt: skip
    """``done`` plus the projected cost of ``remaining`` steps, from ``(ds, dy)`` increments."""
    incs = [(ds, dy) for ds, dy in increments if ds > 0]
    if not incs or remaining <= 0:
        return Interval(done, done if remaining <= 0 else None, done if remaining <= 0 else None)
    steps = sum(ds for ds, _ in incs)
    mu = sum(dy for _, dy in incs) / steps
    value = done + remaining * mu
    n = len(incs)
    if n < 2:
        return Interval(value)
    var = sum((dy - mu * ds) ** 2 / ds for ds, dy in incs) / (n - 1)
    half = t_quantile(confidence, n - 1) * math.sqrt(var * (remaining**2 / steps + remaining))
    return Interval(value, max(done, value - half), value + half)


@dataclass(frozen=True)
class Point:
    """One progress report: ``step`` done at Unix time ``t`` with ``energy_j`` spent so far."""

    t: float
    step: float
    energy_j: float


def project(
    points: Sequence[Point],
    total: float,
    started_at: float,
    *,
    confidence: float = 0.95,
    recent: int = RECENT,
    g_per_kwh: float | None = None,
    usd_per_kwh: float | None = None,
) -> Projection | None:
    """The projection at ``total`` steps from progress points (``None`` without any).

    ``g_per_kwh`` and ``usd_per_kwh`` (effective, PUE included) turn the
    energy projection into carbon and cost.
    """
    clean: list[Point] = []
    for p in sorted(points, key=lambda p: p.t):
        if not clean or p.step > clean[-1].step:
            clean.append(p)
    if not clean or total <= 0:
        return None
    last = clean[-1]
    pairs = list(itertools.pairwise(clean))[-recent:]
    remaining = max(0.0, total - last.step)
    elapsed = last.t - started_at
    time_i = project_sum(
        elapsed, [(b.step - a.step, b.t - a.t) for a, b in pairs], remaining, confidence
    )
    energy_i = project_sum(
        last.energy_j, [(b.step - a.step, b.energy_j - a.energy_j) for a, b in pairs],
        remaining, confidence,
    )  # fmt: skip
    kwh = energy_i.scaled(1 / 3.6e6)
    return Projection(
        step=last.step,
        total=total,
        fraction=min(1.0, last.step / total),
        elapsed_s=elapsed,
        energy_j=last.energy_j,
        duration_s=time_i,
        total_energy_j=energy_i,
        eta_unix_s=started_at + time_i.value,
        increments_used=len(pairs),
        confidence=confidence,
        co2_g=None if g_per_kwh is None else kwh.scaled(g_per_kwh),
        cost_usd=None if usd_per_kwh is None else kwh.scaled(usd_per_kwh),
    )


class EnergyTrace:
    """Energy spent so far at Unix times (the parent's ticks), interpolated between them."""

    def __init__(self, started_at: float) -> None:
        self._t = [started_at]
        self._e = [0.0]

    def add(self, t: float, energy_j: float) -> None:
        if t > self._t[-1]:
            self._t.append(t)
            self._e.append(energy_j)

    def at(self, t: float) -> float:
        i = bisect.bisect_right(self._t, t)
        if i >= len(self._t):
            return self._e[-1]
        if i == 0:
            return self._e[0]
        t0, t1, e0, e1 = self._t[i - 1], self._t[i], self._e[i - 1], self._e[i]
        return e0 + (e1 - e0) * (t - t0) / (t1 - t0)


class ProgressTracker:
    """The parent's side of a run's events: progress, its projection, published windows.

    Args:
        path: The events file (``GREENML_EVENTS`` of the child); ``None`` for an
            in-process run, whose events are given to :meth:`poll`.
        started_at: Unix time the run started.
        max_windows: Published windows kept for the store; later ones are counted only.
    """

    def __init__(
        self, path: str | None, started_at: float, *, g_per_kwh: float | None = None,
        usd_per_kwh: float | None = None, max_windows: int = 100_000,
    ) -> None:  # fmt: skip

        self.started_at = started_at
        self.g_per_kwh = g_per_kwh
        self.usd_per_kwh = usd_per_kwh
        self.latest: Projection | None = None
        self.windows: list[Any] = []  # Measurements named NAME/rankR
        self.flops: dict[int, dict[str, Any]] = {}  # the latest ``flops`` event per rank
        self.llm_calls: list[dict[str, Any]] = []  # ``llm_call`` events (greenml.llm.remote)
        self.tool_calls: list[tuple[str, float]] = []
        self.windows_dropped = 0
        self._reader = EventReader(path) if path is not None else None
        self._bad_given = 0
        self._trace = EnergyTrace(started_at)
        self._points: dict[int, list[Point]] = {}  # per rank
        self._total: dict[int, float] = {}
        self._max_windows = max_windows

    def poll(
        self, energy_j: float, now: float, given: Sequence[dict[str, Any]] = ()
    ) -> Projection | None:
        """Read new events (and take ``given`` ones); ``energy_j``: the run's at Unix ``now``."""
        # read before the trace point: events predate ``now``
        events = [*(self._reader.read_new() if self._reader else ()), *given]
        self._trace.add(now, energy_j)
        changed = False
        for ev in events:
            try:
                if ev["kind"] == "progress":
                    rank, t = int(ev.get("rank", 0)), finite(ev["t"])
                    step = finite(ev["step"])
                    total = None if ev.get("total") is None else finite(ev["total"])
                    if step < 0 or (total is not None and total <= 0):
                        raise ValueError("step < 0 or total <= 0")
                    self._points.setdefault(rank, []).append(Point(t, step, self._trace.at(t)))
                    if total is not None:
                        self._total[rank] = total
                    changed = True
                elif ev["kind"] == "flops":
                    self.flops[int(ev.get("rank", 0))] = dict(ev)
                elif ev["kind"] == "llm_call" and isinstance(ev.get("call"), dict):
                    if len(self.llm_calls) < self._max_windows:
                        self.llm_calls.append(ev["call"])
                elif ev["kind"] == "tool_call":
                    self.tool_calls.append((str(ev["name"]), finite(ev["duration_s"])))
                elif ev["kind"] == "window":
                    if len(self.windows) < self._max_windows:
                        self.windows.append(window_measurement(ev))
                    else:
                        self.windows_dropped += 1
            except (KeyError, TypeError, ValueError, OverflowError):
                self._bad_given += 1  # a program's bad report never stops the run
        if changed:
            self._project()
        return self.latest

    def _project(self) -> None:
        rank = min(self._points)  # the lowest rank reporting speaks for the job
        total = self._total.get(rank)
        if total is not None:
            self.latest = project(
                self._points[rank], total, self.started_at,
                g_per_kwh=self.g_per_kwh, usd_per_kwh=self.usd_per_kwh,
            )  # fmt: skip

    def summary(
        self, g_per_kwh: float | None = None, usd_per_kwh: float | None = None
    ) -> dict[str, Any] | None:
        """The record's ``progress`` block (``None`` when no progress was reported).

        Rates given here (the run's effective ones, from its accounting) replace
        those given at the start for the carbon and cost projection.
        """
        if not self._points:
            return None
        if g_per_kwh is not None or usd_per_kwh is not None:
            self.g_per_kwh = g_per_kwh if g_per_kwh is not None else self.g_per_kwh
            self.usd_per_kwh = usd_per_kwh if usd_per_kwh is not None else self.usd_per_kwh
            self._project()
        rank = min(self._points)
        last = self._points[rank][-1]
        return {
            "step": last.step,
            "total": self._total.get(rank),
            "reports": len(self._points[rank]),
            "rank": rank,
            "projection": None if self.latest is None else self.latest.to_dict(),
            "windows_from_events": len(self.windows),
            "windows_dropped": self.windows_dropped,
            "bad_event_lines": self._bad_given + (self._reader.bad_lines if self._reader else 0),
        }


def finite(value: Any) -> float:
    """``value`` as a finite float (an event is written by the user's program).

    Raises:
        ValueError: NaN or infinite (``10**400`` raises OverflowError).
    """
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{value!r} is not a finite number")
    return number

"""Energy per item against batch size, measured, and the batch setting for a latency budget.

:func:`measure_batch_curve` runs ``run(batch_size)`` (one batch of inference)
repeatedly for each size inside a Meter window: energy per batch is the
window's energy over the runs, latency is timed per run (p50, p99).
:func:`recommend_batch` picks the size with the least energy per item whose
worst latency fits the budget: a request may wait up to ``max_wait_ms`` for
its batch to fill, then takes the batch's p99 compute time, so
``max_wait_ms = budget − p99``. With an arrival rate, a size whose batch
cannot fill within that wait is skipped (it would run part-empty).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError

if TYPE_CHECKING:
    from greenml.measure.meter import Meter


@dataclass(frozen=True)
class BatchPoint:
    """One batch size, measured."""

    batch_size: int
    runs: int
    latency_p50_s: float
    latency_p99_s: float
    energy_j_per_batch: float
    uncertainty_rel: float
    method: str

    @property
    def energy_j_per_item(self) -> float:
        return self.energy_j_per_batch / self.batch_size

    @property
    def items_per_s(self) -> float:
        return self.batch_size / self.latency_p50_s if self.latency_p50_s > 0 else math.inf

    def to_dict(self) -> dict[str, Any]:
        return {
            "batch_size": self.batch_size,
            "runs": self.runs,
            "latency_p50_ms": self.latency_p50_s * 1000,
            "latency_p99_ms": self.latency_p99_s * 1000,
            "energy_j_per_batch": self.energy_j_per_batch,
            "energy_j_per_item": self.energy_j_per_item,
            "uncertainty_rel": self.uncertainty_rel,
            "method": self.method,
            "items_per_s": self.items_per_s,
        }


@dataclass(frozen=True)
class Recommendation:
    """The batch setting for a latency budget, and what it saves against the smallest batch."""

    max_batch: int
    max_wait_ms: float
    energy_j_per_item: float
    saving_rel: float  # 1 − J/item ÷ J/item of the smallest batch measured
    latency_budget_ms: float
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_batch": self.max_batch,
            "max_wait_ms": self.max_wait_ms,
            "energy_j_per_item": self.energy_j_per_item,
            "saving_rel": self.saving_rel,
            "latency_budget_ms": self.latency_budget_ms,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class BatchCurve:
    """The measured points and, given a budget, the recommendation."""

    points: tuple[BatchPoint, ...]
    recommendation: Recommendation | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "points": [p.to_dict() for p in self.points],
            "recommendation": self.recommendation.to_dict() if self.recommendation else None,
            "notes": list(self.notes),
        }


def measure_batch_curve(
    run: Callable[[int], object],
    batch_sizes: Sequence[int],
    meter: Meter,
    *,
    repeats: int = 10,
    min_time_s: float = 1.0,
    warmup: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> list[BatchPoint]:
    """Measure each batch size: at least ``repeats`` runs and ``min_time_s`` seconds.

    Args:
        run: Runs one batch of the given size (and waits for the device).
        batch_sizes: Sizes to measure, each >= 1.
        meter: Meter whose window gives the energy (its sampler must run,
            or its devices have counters, for short windows to be measured).
        repeats: Fewest timed runs per size.
        min_time_s: Fewest seconds per size (longer windows: smaller uncertainty).
        warmup: Untimed runs before each size.
        clock: Clock for the per-run latency.
    """
    sizes = sorted(set(batch_sizes))
    if not sizes or sizes[0] < 1:
        raise ConfigError(f"batch sizes must be integers >= 1, got {list(batch_sizes)}")
    if repeats < 1:
        raise ConfigError(f"repeats must be >= 1, got {repeats}")
    points = []
    for size in sizes:
        for _ in range(warmup):
            run(size)
        latencies: list[float] = []
        name = f"greenml-batch-{size}"
        with meter.window(name) as window:
            started = clock()
            while len(latencies) < repeats or clock() - started < min_time_s:
                t0 = clock()
                run(size)
                latencies.append(clock() - t0)
        m = window.measurement
        if m is None:  # the window always ends with a measurement; typing cannot tell
            raise ConfigError(f"no measurement for batch size {size}")
        methods = {c.method for c in m.components.values()}
        method = "+".join(sorted(methods)) if methods else "none"
        points.append(
            BatchPoint(
                size,
                len(latencies),
                _quantile(latencies, 0.5),
                _quantile(latencies, 0.99),
                m.total_j / len(latencies),
                m.uncertainty_rel,
                method,
            )
        )
    return points


def recommend_batch(
    points: Sequence[BatchPoint],
    latency_budget_s: float,
    arrival_rate_per_s: float | None = None,
) -> Recommendation | None:
    """The size with the least energy per item that fits the budget; ``None`` if none does."""
    if not latency_budget_s > 0:
        raise ConfigError(f"the latency budget must be > 0, got {latency_budget_s}")
    if arrival_rate_per_s is not None and not arrival_rate_per_s > 0:
        raise ConfigError(f"the arrival rate must be > 0 per second, got {arrival_rate_per_s}")
    if not points:
        return None
    baseline = min(points, key=lambda p: p.batch_size).energy_j_per_item
    feasible = []
    for p in points:
        wait_s = latency_budget_s - p.latency_p99_s
        if wait_s < 0:
            continue
        if arrival_rate_per_s is not None and (p.batch_size - 1) / arrival_rate_per_s > wait_s:
            continue
        feasible.append((p.energy_j_per_item, p.batch_size, p, wait_s))
    if not feasible:
        return None
    energy, _, best, wait_s = min(feasible, key=lambda row: (row[0], row[1]))
    saving = 1.0 - energy / baseline if baseline > 0 else 0.0
    fill = (
        f"; at {arrival_rate_per_s:g}/s a batch of {best.batch_size} fills in "
        f"{(best.batch_size - 1) / arrival_rate_per_s * 1000:.1f} ms"
        if arrival_rate_per_s
        else ""
    )
    reason = (
        f"least J/item among sizes whose p99 compute ({best.latency_p99_s * 1000:.1f} ms) "
        f"plus the wait fits {latency_budget_s * 1000:g} ms{fill}"
    )
    return Recommendation(
        best.batch_size, wait_s * 1000, energy, saving, latency_budget_s * 1000, reason
    )


def batch_curve(
    run: Callable[[int], object],
    batch_sizes: Sequence[int],
    meter: Meter,
    *,
    latency_budget_s: float | None = None,
    arrival_rate_per_s: float | None = None,
    **options: Any,
) -> BatchCurve:
    """Measure the curve and, with a budget, recommend a setting (see the module doc)."""
    points = measure_batch_curve(run, batch_sizes, meter, **options)
    notes = []
    rec = None
    if latency_budget_s is not None:
        rec = recommend_batch(points, latency_budget_s, arrival_rate_per_s)
        if rec is None:
            notes.append(
                f"no batch size fits {latency_budget_s * 1000:g} ms "
                "(p99 compute, or the time to fill the batch, is longer)"
            )
    return BatchCurve(tuple(points), rec, tuple(notes))


def _quantile(values: list[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default) without importing numpy."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)

"""Measure each variant: accuracy from the user's evaluation, energy and latency in windows.

Every variant runs the same example batch in windows of at least
``min_window_s`` and ``repeats`` calls, over ``rounds`` rounds; the order of
the variants rotates each round, so a slow drift (heat, other load) does not
favour whichever runs first. Energy per item is the window's energy over the
items it processed, with the Meter's method and uncertainty; the spread of the
rounds is the statistical uncertainty.

Lazy imports: torch (~1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from greenml.compress.options import CompressOptions
from greenml.compress.variants import Predict, Variant
from greenml.measure.measurement import Measurement, weakest_method

Evaluate = Callable[[Predict], Any]
Progress = Callable[[str], None]


def evaluate_accuracy(variant: Variant, predict: Predict, evaluate: Evaluate) -> None:
    """Set ``variant.accuracy_pct`` from ``evaluate(predict)``; mark it failed if that raises."""
    try:
        value = evaluate(predict)
    except Exception as exc:
        variant.fail(f"evaluate raised {type(exc).__name__}: {_one_line(exc)}")
        return
    try:
        accuracy = float(value)
    except (TypeError, ValueError):
        accuracy = math.nan
    if not math.isfinite(accuracy):
        variant.fail(f"evaluate returned {value!r}, not a finite accuracy in percent")
        return
    variant.accuracy_pct = accuracy


@dataclass
class _Tally:
    latencies_s: list[float] = field(default_factory=list)
    per_item_j: list[float] = field(default_factory=list)
    energy_j: float = 0.0
    duration_s: float = 0.0
    items: int = 0
    methods: list[str] = field(default_factory=list)
    uncertainty_j: float = 0.0  # Σ energy × relative uncertainty (systematic: they add)
    measured: bool = True


def measure_variants(
    entries: list[tuple[Variant, Predict]],
    args: tuple[Any, ...],
    meter: Any,
    options: CompressOptions,
    repeats: int,
    progress: Progress | None = None,
) -> None:
    """Fill latency, throughput and energy of each variant that is still ``ok``."""
    items = int(args[0].shape[0])
    sync = _cuda_sync()
    live = []
    for variant, predict in entries:
        if variant.ok and _warm(variant, predict, args, options.warmup, sync):
            live.append((variant, predict))
    tallies = {v.name: _Tally() for v, _ in live}
    for round_no in range(options.rounds):
        if progress:
            progress(f"measuring, round {round_no + 1} of {options.rounds}")
        shift = round_no % max(len(live), 1)
        for variant, predict in live[shift:] + live[:shift]:
            if not variant.ok:
                continue
            try:
                _window(meter, variant.name, round_no, predict, args, items, repeats,
                        options.min_window_s, sync, tallies[variant.name])  # fmt: skip
            except Exception as exc:
                variant.fail(f"inference failed: {type(exc).__name__}: {_one_line(exc)}")
    for variant, _ in live:
        if variant.ok:
            _fill(variant, tallies[variant.name], items)


def _warm(variant: Variant, predict: Predict, args: tuple[Any, ...], warmup: int,
          sync: Callable[[], None]) -> bool:  # fmt: skip
    try:
        for _ in range(max(warmup, 1)):
            predict(*args)
        sync()
    except Exception as exc:
        variant.fail(f"inference failed: {type(exc).__name__}: {_one_line(exc)}")
        return False
    return True


def _window(
    meter: Any,
    name: str,
    round_no: int,
    predict: Predict,
    args: tuple[Any, ...],
    items: int,
    repeats: int,
    min_window_s: float,
    sync: Callable[[], None],
    tally: _Tally,
) -> None:
    window = f"greenml-compress/{name}/round{round_no}"
    latencies: list[float] = []
    clock = time.perf_counter
    meter.begin_window(window)
    try:
        start = clock()
        while True:
            t0 = clock()
            predict(*args)
            sync()
            t1 = clock()
            latencies.append(t1 - t0)
            if len(latencies) >= repeats and t1 - start >= min_window_s:
                break
    finally:
        measurement: Measurement = meter.end_window(window)
    done = len(latencies) * items
    tally.latencies_s.extend(latencies)
    tally.items += done
    tally.duration_s += measurement.duration_s
    if not measurement.components:
        tally.measured = False
        return
    tally.energy_j += measurement.total_j
    tally.per_item_j.append(measurement.total_j / done)
    tally.uncertainty_j += measurement.total_j * measurement.uncertainty_rel
    tally.methods.extend(c.method for c in measurement.components.values())


def _fill(variant: Variant, tally: _Tally, batch: int) -> None:
    variant.batch_size = batch
    variant.calls = len(tally.latencies_s)
    variant.latency_p50_s = percentile(tally.latencies_s, 50)
    variant.latency_p99_s = percentile(tally.latencies_s, 99)
    if tally.duration_s > 0:
        variant.throughput_items_per_s = tally.items / tally.duration_s
    if not tally.measured or not tally.per_item_j:
        variant.notes.append("no sensor measured energy: the Meter has no device")
        return
    variant.energy_per_1k_j = 1000.0 * tally.energy_j / tally.items
    variant.energy_method = weakest_method(tally.methods)
    variant.energy_uncertainty_rel = tally.uncertainty_j / tally.energy_j if tally.energy_j else 0.0
    per_item = tally.per_item_j
    if len(per_item) >= 2 and statistics.fmean(per_item) > 0:
        error = statistics.stdev(per_item) / math.sqrt(len(per_item))
        variant.energy_spread_rel = error / statistics.fmean(per_item)


def percentile(values: list[float], pct: float) -> float | None:
    """Nearest-rank percentile (``None`` for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100.0 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def _cuda_sync() -> Callable[[], None]:
    """Wait for queued CUDA work, so a latency is the work's and not the launch's."""
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        return torch.cuda.synchronize
    return lambda: None


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:299] + "…"

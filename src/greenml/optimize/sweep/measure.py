"""One measured window of a sweep configuration: samples, seconds, joules, losses."""

from __future__ import annotations

import itertools
import math
import operator
import time
from collections.abc import Callable
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError, WindowError
from greenml.measure.measurement import weakest_method
from greenml.optimize.sweep.result import ConfigResult

if TYPE_CHECKING:
    from greenml.measure.meter import Meter


def measure(
    step: Callable[[], Any],
    meter: Meter,
    window: str,
    min_steps: int,
    min_s: float,
    result: ConfigResult,
) -> None:
    """Run ``step`` in a Meter window for at least ``min_steps`` and ``min_s``; fill ``result``.

    Raises:
        ConfigError: The step returned something other than samples or (samples, loss),
            or the steps processed no samples.
    """
    steps = samples = 0
    raw_losses: list[Any] = []
    marks: list[tuple[float, int]] = []  # (time, samples so far) after each step
    meter.begin_window(window)
    try:
        start = time.monotonic()
        marks.append((start, 0))
        while steps < min_steps or marks[-1][0] - start < min_s:
            n, loss = unpack(step())
            steps += 1
            samples += n
            marks.append((time.monotonic(), samples))
            if loss is not None:
                raw_losses.append(loss.detach() if hasattr(loss, "detach") else loss)
    except BaseException:
        _abandon(meter, window)
        raise
    m = meter.end_window(window)
    if samples <= 0:
        raise ConfigError(f"the {steps} measured steps processed no samples")
    result.steps, result.samples, result.duration_s = steps, samples, m.duration_s
    result.energy_j, result.uncertainty_rel = m.total_j, m.uncertainty_rel
    result.method = _method(m)
    result.components_j = {name: c.energy_j for name, c in m.components.items()}
    result.losses = _floats(raw_losses, result)
    if result.config.device == "cpu":  # on a GPU, step times are launch times
        result.throughput_spread_rel = _spread(marks)


def _spread(marks: list[tuple[float, int]]) -> float | None:
    """Relative standard deviation of the throughput of the window's four quarters."""
    n = len(marks) - 1
    if n < 8:
        return None
    cuts = [marks[n * i // 4] for i in range(5)]
    rates = []
    for (t0, s0), (t1, s1) in itertools.pairwise(cuts):
        if t1 <= t0:
            return None
        rates.append((s1 - s0) / (t1 - t0))
    mean = sum(rates) / len(rates)
    if mean <= 0:
        return None
    return math.sqrt(sum((r - mean) ** 2 for r in rates) / len(rates)) / mean


def unpack(out: Any) -> tuple[int, Any]:
    """``samples`` or ``(samples, loss)`` → (samples, loss or None)."""
    samples, loss = (out[0], out[1]) if isinstance(out, tuple) and len(out) == 2 else (out, None)
    try:
        if isinstance(samples, bool):
            raise TypeError
        return operator.index(samples), loss
    except TypeError:
        raise ConfigError(
            f"the step returned {out!r:.60}; it must return the number of samples it "
            "processed, or (samples, loss)"
        ) from None


def _floats(raw: list[Any], result: ConfigResult) -> list[float]:
    try:
        return [float(x) for x in raw]
    except (TypeError, ValueError, RuntimeError) as exc:
        result.notes.append(f"losses ignored: not scalars ({reason_of(exc)})")
        return []


def _method(m: Any) -> str:
    methods = [c.method for c in m.components.values()]
    return weakest_method(methods) if methods else "none"


def _abandon(meter: Meter, window: str) -> None:
    with suppress(WindowError):
        meter.end_window(window)



def reason_of(exc: BaseException) -> str:
    """``Type: first line`` of an exception, cut to a readable length."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    shown = lines[:1]
    while shown and shown[-1].endswith(":") and len(shown) < min(3, len(lines)):
        shown.append(lines[len(shown)])  # "backend='inductor' raised:" → and what it raised
    text = f"{type(exc).__name__}: {' '.join(shown)}" if lines else type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."

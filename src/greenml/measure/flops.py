"""FLOPs counted on a few sampled steps, and model FLOPs utilization (MFU).

:class:`FlopSampler` runs a training or inference step under PyTorch's own
counter (``torch.utils.flop_counter.FlopCounterMode``) on the first step and
then every ``every``-th step, never on the others, and carries the counts per
window name (``step`` …) and for the run: FLOPs per step are the mean of the
sampled steps, the run's FLOPs that mean × the steps taken.

    sampler = FlopSampler(every=100, precision="bf16")
    for batch in data:
        loss = sampler.maybe_count(train_step, batch, samples=len(batch))
    sampler.publish()          # to ``greenml run`` (a ``flops`` event); no-op outside it

Callbacks that only see hook boundaries use :meth:`FlopSampler.step_begin` and
:meth:`FlopSampler.step_end` (the Lightning and Hugging Face callbacks take
``flops=N``). The Run API calls :meth:`maybe_count`. With a Meter:

    with meter.window("step") as w: ...               # or meter.end_window("run")
    sampler.block(measurement)                        # FLOPs, FLOP/s, MFU, per joule

The counter never breaks the step: if its formula for an op fails, the op still
runs, a warning names the op, and the figure is marked unavailable (never a
silent zero). :func:`flops_block` turns the counts, the run's duration, energy
and GPUs into the record's ``flops`` block: FLOPs, FLOP/s, MFU against the
dense peak of the precision in use (``gpus.csv``, its source named), FLOPs per
joule and joules per sample.

Lazy imports: torch, only when a step is counted.
"""

from __future__ import annotations

import logging
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from greenml.errors import ConfigError

if TYPE_CHECKING:
    from greenml.measure.measurement import Measurement

log = logging.getLogger("greenml")
T = TypeVar("T")
COUNTER = "torch.utils.flop_counter.FlopCounterMode"
MAX_WINDOWS = 20
"""Window names carried into the record (an event line stays one small atomic write)."""
LOW_MFU = 0.2
"""Below this MFU a training run leaves most of the device's arithmetic unused."""


@dataclass
class WindowFlops:
    """Counts of one window name: sampled steps' FLOPs, steps taken, samples, times."""

    counted: list[float] = field(default_factory=list)
    steps: int = 0
    samples: float = 0.0
    counted_s: list[float] = field(default_factory=list)
    plain_s: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def flops_per_step(self) -> float | None:
        return statistics.fmean(self.counted) if self.counted and not self.failures else None

    def to_dict(self) -> dict[str, Any]:
        per_step = self.flops_per_step
        return {
            "status": "ok" if per_step is not None else "unavailable",
            "flops_per_step": per_step,
            "flops": None if per_step is None else per_step * self.steps,
            "steps": self.steps,
            "sampled_steps": len(self.counted),
            "samples": self.samples or None,
            "spread_rel": _spread(self.counted),
            "overhead_s": self.overhead_s(),
            "reason": "; ".join(self.failures) or None,
        }

    def overhead_s(self) -> float | None:
        """Extra seconds the counted steps took over the mean uncounted step, summed."""
        if not self.counted_s or not self.plain_s:
            return None
        plain = statistics.fmean(self.plain_s)
        return max(0.0, sum(s - plain for s in self.counted_s))


class FlopSampler:
    """Counts FLOPs on sampled steps (see the module docstring).

    Args:
        every: Count one step in ``every`` (the first step is always counted).
        precision: ``fp32``, ``tf32``, ``fp16`` or ``bf16``: which peak MFU is
            against; inferred at the first counted step when not given
            (autocast's dtype, else TF32 if enabled for matmuls, else FP32).
    """

    def __init__(self, every: int = 100, *, precision: str | None = None) -> None:
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ConfigError(f"every must be a whole number ≥ 1, got {every!r}")
        self.every = every
        self.precision = precision
        self.precision_source = "given" if precision else None
        self.windows: dict[str, WindowFlops] = {}
        self._open: dict[str, tuple[Any, float]] = {}  # window → (counter or None, start)

    def should_count(self, window: str = "step") -> bool:
        """Whether the next step of ``window`` is one the counter runs on."""
        return self._window(window).steps % self.every == 0

    def maybe_count(
        self, step_fn: Callable[..., T], *args: Any, window: str = "step",
        samples: float | None = None, **kwargs: Any,
    ) -> T:  # fmt: skip
        """Run ``step_fn(*args, **kwargs)``, under the counter if this step is sampled.

        The step's own exceptions propagate unchanged (the step is not counted).
        """
        self.step_begin(window)
        try:
            result = step_fn(*args, **kwargs)
        except BaseException:
            self.step_abort(window)
            raise
        self.step_end(window, samples=samples)
        return result

    def step_abort(self, window: str = "step") -> None:
        """The step failed: stop the counter if it ran; the step is not counted."""
        opened = self._open.pop(window, None)
        if opened is not None and opened[0] is not None:
            _stop_counter(opened[0], WindowFlops())

    def step_begin(self, window: str = "step") -> None:
        """A step starts (for callbacks); the counter starts if the step is sampled."""
        counter = None
        if self.should_count(window):
            counter = _start_counter(self._window(window))
            if counter is not None and self.precision is None:
                self.precision, self.precision_source = infer_precision()
        self._open[window] = (counter, time.perf_counter())

    def step_end(self, window: str = "step", samples: float | None = None) -> None:
        """The step ends: stop the counter if it ran, count the step and its samples."""
        opened = self._open.pop(window, None)
        counts = self._window(window)
        counts.steps += 1
        if samples is not None and math.isfinite(samples) and samples > 0:
            counts.samples += float(samples)
        if opened is None:
            return
        counter, started = opened
        elapsed = time.perf_counter() - started
        if counter is None:
            counts.plain_s.append(elapsed)
            del counts.plain_s[:-1000]
            return
        counts.counted_s.append(elapsed)
        total = _stop_counter(counter, counts)
        if total is not None:
            counts.counted.append(total)

    def totals(self) -> dict[str, Any]:
        """The run's counts: every window's, and their sum (``None`` if any is unavailable)."""
        windows = {name: w.to_dict() for name, w in self.windows.items()}
        known = [w["flops"] for w in windows.values()]
        failures = [w["reason"] for w in windows.values() if w["reason"]]
        steps = sum(w.steps for w in self.windows.values())
        sampled = sum(len(w.counted) for w in self.windows.values())
        overheads = [w["overhead_s"] for w in windows.values() if w["overhead_s"] is not None]
        spreads = [w["spread_rel"] for w in windows.values() if w["spread_rel"] is not None]
        return {
            "status": "ok" if known and None not in known else "unavailable",
            "flops": sum(known) if known and None not in known else None,
            "steps": steps,
            "sampled_steps": sampled,
            "samples": sum(w.samples for w in self.windows.values()) or None,
            "precision": self.precision,
            "precision_source": self.precision_source,
            "spread_rel": max(spreads) if spreads else None,
            "overhead_s": sum(overheads) if overheads else None,
            "reason": "; ".join(failures) or (None if known else "no step was counted"),
            "windows": windows,
        }

    def block(
        self, measurement: Measurement, window: str | None = None, steps: int | None = None
    ) -> dict[str, Any]:
        """The ``flops`` block for a Meter measurement.

        Args:
            measurement: The run's measurement, or one window's.
            window: Use only that window name's counts (``None``: every window's).
            steps: The steps ``measurement`` spans (``1`` for one step's window);
                ``None``: every step counted so far.
        """
        counts = self.totals()
        if window is not None:
            counts = {**counts, **self._window(window).to_dict()}
        if steps is not None:
            per_step = self._window(window or "step").flops_per_step
            counts["flops"] = None if per_step is None else per_step * steps
            counts["steps"] = steps
        gpus = measurement.components.get("gpu")
        names = [d.name or key for key, d in (gpus.devices if gpus else {}).items()]
        return flops_block(counts, duration_s=measurement.duration_s,
                           energy_j=measurement.total_j, gpus=names)  # fmt: skip

    def publish(self) -> None:
        """Send the counts to ``greenml run`` (a ``flops`` event); a no-op outside it."""
        from greenml.measure import events

        totals = self.totals()
        if totals["reason"]:
            totals["reason"] = str(totals["reason"])[:500]  # an event line stays small
        totals["windows"] = {
            name: {k: w[k] for k in ("flops_per_step", "steps", "sampled_steps")}
            for name, w in list(totals["windows"].items())[:MAX_WINDOWS]
        }
        events.emit("flops", **totals)

    def _window(self, name: str) -> WindowFlops:
        return self.windows.setdefault(name, WindowFlops())


def merge_ranks(events: Mapping[int, Mapping[str, Any]]) -> dict[str, Any]:
    """One job's counts from each rank's ``flops`` event: FLOPs and samples summed (each
    rank counts its own share of the work), steps and precision from the lowest rank. If a
    rank's figure is unavailable, so is the job's."""
    ranks = sorted(events)
    first = dict(events[ranks[0]])
    if len(ranks) == 1:
        return first
    values = [events[r].get("flops") for r in ranks]
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values):
        missing = [str(r) for r, v in zip(ranks, values, strict=True) if v is None]
        first.update(flops=None, reason=f"no FLOPs from rank(s) {', '.join(missing)}")
        return first
    samples = [events[r].get("samples") for r in ranks]
    first["flops"] = float(sum(values))  # type: ignore[arg-type]
    if all(isinstance(s, (int, float)) and not isinstance(s, bool) for s in samples):
        first["samples"] = float(sum(samples))  # type: ignore[arg-type]
    first["source"] = f"{COUNTER} on sampled steps, summed over {len(ranks)} ranks"
    first.pop("windows", None)  # per-rank windows would mislead once summed
    return first


def count_flops(fn: Callable[[], Any]) -> float:
    """FLOPs of one call of ``fn`` (forward and backward if ``fn`` runs both).

    Raises:
        ConfigError: The counter failed on an op (the op is named).
    """
    counts = WindowFlops()
    counter = _start_counter(counts)
    try:
        fn()
    finally:
        total = _stop_counter(counter, counts) if counter is not None else None
    if total is None:
        raise ConfigError("; ".join(counts.failures) or "the FLOP counter did not run")
    return total


def flops_from_tags(tags: Mapping[str, str]) -> dict[str, Any] | None:
    """``flops=`` (and ``samples=``, ``precision=``) run tags as counts; None without
    ``flops``. A tag that is not a finite number ≥ 0 gives an unavailable figure with the
    reason, never a zero."""
    text = tags.get("flops")
    if text is None:
        return None
    source = f"given: run tag flops={text}"
    value = _tag_number(text)
    if value is None:
        return {"flops": None, "source": source, "reason": f"tag flops={text!r} is not a number"}
    samples = _tag_number(tags.get("samples"))
    precision = tags.get("precision")
    return {"flops": value, "samples": samples, "source": source, "precision": precision,
            "precision_source": "given: run tag precision" if precision else None}  # fmt: skip


def _tag_number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def infer_precision() -> tuple[str, str]:
    """(precision, how it was told) from autocast and the matmul settings."""
    import torch

    for device in ("cuda", "cpu"):
        if torch.is_autocast_enabled(device):
            dtype = torch.get_autocast_dtype(device)
            name = {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(dtype, "fp32")
            return name, f"inferred: autocast ({device}) in {name}"
    if torch.backends.cuda.matmul.allow_tf32:
        return "tf32", "inferred: TF32 allowed for CUDA matmuls"
    return "fp32", "inferred: no autocast, TF32 off (an fp32/bf16 model without autocast " \
                   "should pass precision=)"


def flops_block(
    counts: Mapping[str, Any],
    *,
    duration_s: float,
    energy_j: float,
    gpus: Sequence[str],
    method: str = "counted",
    source: str | None = None,
) -> dict[str, Any]:
    """The record's ``flops`` block: FLOPs, FLOP/s, MFU, FLOPs per joule, joules per sample.

    Args:
        counts: :meth:`FlopSampler.totals` (or a ``flops`` event): ``flops``,
            ``steps``, ``sampled_steps``, ``samples``, ``precision`` …
        duration_s: The run's wall-clock time.
        energy_j: The run's energy (IT).
        gpus: The GPU names the run used (the peak is their sum).
        method: ``counted`` (by the counter) or ``given`` (a tag or option).
        source: How the figure was obtained (default: the counter on N of M steps).
    """
    flops = counts.get("flops")
    steps, sampled = _whole(counts.get("steps")), _whole(counts.get("sampled_steps"))
    default = f"{COUNTER} on {sampled} of {steps} steps (mean per step × steps)"
    block: dict[str, Any] = {
        "status": "ok", "method": method,
        "source": source or str(counts.get("source") or default),
        "flops": flops, "steps": steps or None, "sampled_steps": sampled or None,
    }  # fmt: skip
    if isinstance(flops, bool) or not isinstance(flops, (int, float)) or not math.isfinite(flops) \
            or flops < 0:  # fmt: skip
        block.update(status="unavailable", flops=None,
                     reason=str(counts.get("reason") or "no FLOPs counted"))  # fmt: skip
        return block
    spread = counts.get("spread_rel")
    if isinstance(spread, (int, float)) and math.isfinite(spread) and spread >= 0:
        block["uncertainty_rel"] = float(spread)
    else:
        block["uncertainty_rel"] = 0.0
    overhead = counts.get("overhead_s")
    if isinstance(overhead, (int, float)) and math.isfinite(overhead):
        block["counter_overhead_s"] = float(overhead)
    block["flops_per_s"] = flops / duration_s if duration_s > 0 else None
    block["flops_per_j"] = flops / energy_j if energy_j > 0 else None
    samples = counts.get("samples")
    if isinstance(samples, (int, float)) and not isinstance(samples, bool) and samples > 0:
        block["samples"] = samples
        block["j_per_sample"] = energy_j / samples
    block.update(_mfu(block["flops_per_s"], gpus, counts.get("precision"),
                      counts.get("precision_source")))  # fmt: skip
    windows = _windows(counts.get("windows"))
    if windows:
        block["windows"] = windows
    return block


def _windows(raw: Any) -> dict[str, dict[str, Any]]:
    """Per window name: FLOPs per step, steps, sampled steps (what a program sent, checked)."""
    if not isinstance(raw, Mapping):
        return {}
    out = {}
    for name, w in list(raw.items())[:MAX_WINDOWS]:
        if not isinstance(name, str) or not isinstance(w, Mapping):
            continue
        per_step = w.get("flops_per_step")
        value: float | None = None
        if isinstance(per_step, (int, float)) and not isinstance(per_step, bool):
            value = float(per_step) if math.isfinite(per_step) and per_step >= 0 else None
        out[name] = {"flops_per_step": value,
                     "steps": _whole(w.get("steps")),
                     "sampled_steps": _whole(w.get("sampled_steps"))}  # fmt: skip
    return out


def _whole(value: Any) -> int:
    """A count from a program's event: a whole number ≥ 0, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _mfu(
    flops_per_s: float | None, gpus: Sequence[str], precision: Any, precision_source: Any
) -> dict[str, Any]:
    from greenml.hardware.gpu import gpu_spec, normalize_precision

    if not gpus:
        return {"mfu": None, "mfu_reason": "no GPU measured: MFU needs a device's peak"}
    try:
        key = normalize_precision(str(precision or "fp32"))
    except ConfigError as exc:
        return {"mfu": None, "mfu_reason": str(exc)}
    said = str(precision_source or ("given" if precision else "default: fp32 (not given)"))
    try:
        specs = [gpu_spec(name) for name in gpus]
        peak = sum(s.peak_tflops(key) for s in specs) * 1e12
    except ConfigError as exc:
        return {"mfu": None, "precision": key, "mfu_reason": str(exc)}
    names = ", ".join(dict.fromkeys(s.name for s in specs))
    out = {
        "precision": key, "precision_source": said, "peak_flops_per_s": peak,
        "peak_source": f"gpus.csv: {names} dense {key} peak × {len(specs)} "
                       f"({'; '.join(dict.fromkeys(s.source for s in specs))})",
        "mfu": None if flops_per_s is None or peak <= 0 else flops_per_s / peak,
    }  # fmt: skip
    return out


def _start_counter(counts: WindowFlops) -> Any | None:
    """A started counter whose formulas never raise into the step; None if it cannot start."""
    try:
        from torch.utils.flop_counter import FlopCounterMode

        counter = FlopCounterMode(display=False)
        counter.flop_registry = {
            op: _guarded(op, formula, counts) for op, formula in counter.flop_registry.items()
        }
        counter.__enter__()  # type: ignore[no-untyped-call]
        return counter
    except Exception as exc:  # the step runs uncounted; the figure says why
        _fail(counts, f"the FLOP counter could not start: {exc!r}")
        return None


def _stop_counter(counter: Any, counts: WindowFlops) -> float | None:
    try:
        counter.__exit__(None, None, None)
        total = float(counter.get_total_flops())
    except Exception as exc:
        _fail(counts, f"the FLOP counter failed: {exc!r}")
        return None
    return None if counts.failures else total


def _guarded(op: Any, formula: Callable[..., int], counts: WindowFlops) -> Callable[..., int]:
    def count(*args: Any, **kwargs: Any) -> int:
        try:
            return formula(*args, **kwargs)
        except Exception as exc:
            _fail(counts, f"the FLOP counter failed on {op}: {exc!r}")
            return 0  # the figure is marked unavailable, so this zero is never reported

    return count


def _fail(counts: WindowFlops, reason: str) -> None:
    if reason not in counts.failures:
        counts.failures.append(reason)
        log.warning("greenml: FLOPs unavailable: %s", reason)


def _spread(values: list[float]) -> float | None:
    """Relative standard deviation of the sampled steps' FLOPs (0: every step alike)."""
    if len(values) < 2:
        return 0.0 if values else None
    mean = statistics.fmean(values)
    return statistics.pstdev(values) / mean if mean > 0 else 0.0

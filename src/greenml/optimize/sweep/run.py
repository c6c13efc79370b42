"""The software-knob sweep: one training step under a grid of configurations.

The protocol::

    def make_step(config: SweepConfig) -> TrainStep:
        model = Net().to(config.device)
        loader = DataLoader(data, batch_size=config.batch_size, num_workers=config.workers)
        batches = iter_forever(loader)
        def step():
            x, y = next(batches)
            ...                       # forward, loss, backward, optimizer step
            return len(x), loss.detach()   # or just len(x)
        return TrainStep(step, model)

    result = sweep(make_step, SweepGrid(("fp32", "bf16"), (32, 128), (False, True)))
    result.recommend(eta=0.5)

The factory owns what only it can build: model, optimizer and a data loader
for ``config.batch_size`` and ``config.workers`` on ``config.device``.
greenml owns the other knobs and applies them to what the factory returns
(see :mod:`greenml.optimize.sweep.knobs`): the precision (strict fp32, tf32,
or bf16/fp16 autocast of the model's forward) and ``torch.compile`` of the
model in place. Exposing the model (``TrainStep(step, model)``, or any
callable with a ``.model`` attribute) is needed for compile; without it,
autocast wraps the whole step call.

Each configuration is seeded the same, built, warmed up (compilation happens
there, unmeasured), then measured in a Meter window: joules per sample with
the energy's method and uncertainty, samples per second, and the losses the
step returned. A configuration that raises (OOM, a compile error ...) is
marked ``failed`` with the reason; one whose knob does not exist here (tf32 on
a CPU) is ``skipped``; the sweep goes on either way.
"""

from __future__ import annotations

import gc
import math
import random
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError, KnobUnavailable
from greenml.measure.measurement import ESTIMATED
from greenml.measure.meter import Meter
from greenml.optimize.steady import run_until_steady
from greenml.optimize.sweep.grid import SweepConfig, SweepGrid, as_configs, check_device
from greenml.optimize.sweep.knobs import (
    autocast_forward,
    compile_model,
    float32_mode,
    grad_scaler,
    import_torch,
    skip_reason,
    step_autocast,
)
from greenml.optimize.sweep.measure import measure, reason_of, unpack
from greenml.optimize.sweep.power import resolve_max_power
from greenml.optimize.sweep.report import DEFAULT_LOSS_TOLERANCE, SweepResult
from greenml.optimize.sweep.result import FAILED, SKIPPED, ConfigResult

if TYPE_CHECKING:
    from greenml.measure.meter import Meter

__all__ = [
    "ConfigResult",
    "SweepConfig",
    "SweepGrid",
    "SweepResult",
    "TrainStep",
    "grad_scaler",
    "sweep",
]

#: Power sampling rate of the Meter a sweep creates: windows are seconds long.
SAMPLE_HZ = 10.0
ESTIMATED_NOTE = (
    "every energy figure is estimated by a model, not measured: the modelled power "
    "hardly differs between configurations, so J/sample differences mostly mirror time"
)

Factory = Callable[[SweepConfig], Callable[[], Any]]
OnStart = Callable[[int, int, SweepConfig], None]
OnResult = Callable[[int, int, ConfigResult], None]


@dataclass
class TrainStep:
    """What ``make_step`` returns: one training step, and the model it trains.

    Attributes:
        run: Runs one step; returns the samples it processed, or
            ``(samples, loss)`` (a float or a scalar tensor).
        model: The ``torch.nn.Module`` to compile and autocast; ``None`` if
            the factory does not expose it.
    """

    run: Callable[[], Any]
    model: Any = None

    def __call__(self) -> Any:
        return self.run()


@dataclass(frozen=True)
class _Plan:
    warmup_steps: int
    measure_steps: int
    measure_s: float
    compile_options: Mapping[str, Any]
    seed: int | None


def sweep(
    make_step: Factory,
    grid: SweepGrid | Sequence[SweepConfig],
    *,
    warmup_steps: int = 3,
    measure_steps: int | None = 20,
    measure_s: float | None = None,
    meter: Meter | None = None,
    device: str = "cpu",
    max_power_w: float | None = None,
    compile_options: Mapping[str, Any] | None = None,
    seed: int | None = 0,
    loss_tolerance_rel: float = DEFAULT_LOSS_TOLERANCE,
    on_start: OnStart | None = None,
    on_result: OnResult | None = None,
) -> SweepResult:
    """Measure ``make_step`` under every configuration of ``grid``.

    Args:
        make_step: Builds the step for one configuration (see the module doc).
        grid: A :class:`SweepGrid`, or the configurations themselves.
        warmup_steps: Unmeasured steps per configuration (at least one when compiling).
        measure_steps: Measure at least this many steps.
        measure_s: And for at least this many seconds (``None``: no minimum).
        meter: Measure with this Meter; by default one over this machine's
            CPU and DRAM (and the GPU of ``device="cuda"``), sampling at 10 Hz.
        device: ``cpu`` or ``cuda`` (the current CUDA device).
        max_power_w: P_max of the cost; by default the device's (see
            :mod:`greenml.optimize.sweep.power`).
        compile_options: Keyword arguments of ``torch.compile`` (``mode`` ...).
        seed: ``random.seed`` and ``torch.manual_seed`` before each factory
            call, so every configuration starts from the same weights and
            batches (``None``: no seeding; numpy's generator is not touched).
        loss_tolerance_rel: Loss change (vs fp32) above which a precision is flagged.
        on_start: Called with (index, total, config) before each configuration.
        on_result: Called with (index, total, result) after each configuration.

    Raises:
        ConfigError: An empty grid, a bad step count, CUDA asked for but absent.
    """
    plan = _plan(warmup_steps, measure_steps, measure_s, compile_options, seed)
    if not (loss_tolerance_rel >= 0):
        raise ConfigError(f"the loss tolerance must be >= 0, not {loss_tolerance_rel}")
    configs = as_configs(grid, check_device(device))
    torch = import_torch()
    gpu_index = 0
    if device == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(f"device cuda asked for, but torch {torch.__version__} sees no GPU")
        gpu_index = torch.cuda.current_device()
    own_meter = meter is None
    if meter is None:
        gpus = [gpu_index] if device == "cuda" else []
        meter = Meter(gpus=gpus, cpu=True, sample_hz=SAMPLE_HZ)
    results: list[ConfigResult] = []
    # Objects older than the sweep are left out of the collections that free each
    # configuration: with torch loaded a full collection scans ~10^5 objects (0.3 s).
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    try:
        for index, config in enumerate(configs, start=1):
            if on_start is not None:
                on_start(index, len(configs), config)
            result = _run_config(make_step, config, plan, meter, f"sweep{index}")
            results.append(result)
            if on_result is not None:
                on_result(index, len(configs), result)
        notes = list(meter.notes)
    finally:
        if freeze:
            gc.unfreeze()
        if own_meter:
            meter.close()
    power = resolve_max_power(device, results, max_power_w, gpu_index)
    methods = {r.method for r in results if r.ok}
    if methods == {ESTIMATED}:
        notes.append(ESTIMATED_NOTE)
    return SweepResult(results, device, power.watts, power.source, loss_tolerance_rel, notes)


def _plan(
    warmup_steps: int,
    measure_steps: int | None,
    measure_s: float | None,
    compile_options: Mapping[str, Any] | None,
    seed: int | None,
) -> _Plan:
    if warmup_steps < 0:
        raise ConfigError(f"warm-up steps must be >= 0, not {warmup_steps}")
    if measure_steps is None and measure_s is None:
        raise ConfigError("give the measured steps, the measured seconds, or both")
    if measure_steps is not None and measure_steps < 1:
        raise ConfigError(f"measured steps must be at least 1, not {measure_steps}")
    if measure_s is not None and not (measure_s >= 0 and math.isfinite(measure_s)):
        raise ConfigError(f"measured seconds must be a number >= 0, not {measure_s}")
    return _Plan(
        warmup_steps, measure_steps or 1, measure_s or 0.0, dict(compile_options or {}), seed
    )


def _run_config(
    make_step: Factory, config: SweepConfig, plan: _Plan, meter: Meter, window: str
) -> ConfigResult:
    """Build, warm up and measure one configuration; failures become its status."""
    result = ConfigResult(config)
    reason = skip_reason(config.precision, config.device)
    if reason is not None:
        return _ended(result, SKIPPED, reason)
    torch = import_torch()
    step: Any = None
    try:
        with float32_mode(config.precision, config.device):
            if plan.seed is not None:
                random.seed(plan.seed)
                torch.manual_seed(plan.seed)
            step = make_step(config)
            if not callable(step):
                raise ConfigError(f"make_step returned {type(step).__name__}, not a callable step")
            with _apply_knobs(step, config, plan, result):
                for _ in range(result.warmup_steps):
                    unpack(step())
                if config.device == "cuda":  # a GPU heats up: measure it in steady state
                    outcome = run_until_steady(partial(_step_once, step), meter)
                    result.notes.append(f"steady state: {outcome}")
                measure(step, meter, window, plan.measure_steps, plan.measure_s, result)
    except KnobUnavailable as exc:
        return _ended(result, SKIPPED, str(exc))
    except Exception as exc:  # OOM, a compile error, a bug of the factory: record, go on
        return _ended(result, FAILED, reason_of(exc))
    finally:
        del step
        _release(torch, config)
    return result


def _step_once(step: Callable[[], Any]) -> None:
    unpack(step())


def _apply_knobs(step: Any, config: SweepConfig, plan: _Plan, result: ConfigResult) -> Any:
    """Compile and autocast what ``step`` exposes; the context to run its steps in."""
    model = getattr(step, "model", None)
    result.warmup_steps = plan.warmup_steps
    whole_step = False
    if config.precision in ("bf16", "fp16"):
        if model is not None and autocast_forward(model, config):
            result.autocast = "forward"
        else:
            whole_step = True
            result.autocast = "step"
            result.notes.append(
                "no model exposed: the whole step (backward and optimizer included) ran "
                "under autocast"
            )
    if config.compile:
        compile_model(model, plan.compile_options)
        if plan.warmup_steps == 0:
            result.warmup_steps = 1
            result.notes.append("one warm-up step added so that compilation is not measured")
    return step_autocast(config) if whole_step else nullcontext()


def _ended(result: ConfigResult, status: Any, reason: str) -> ConfigResult:
    result.status, result.reason = status, reason
    result.steps = result.samples = 0
    return result


def _release(torch: Any, config: SweepConfig) -> None:
    """Free what the configuration held (loader workers, compiled graphs, GPU memory)."""
    gc.collect()
    if config.compile:
        torch._dynamo.reset()
    if config.device == "cuda":
        torch.cuda.empty_cache()

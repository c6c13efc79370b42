"""``compress``: build each compressed variant of a model, measure it, recommend one.

Lazy imports: torch (~1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from greenml.compress.measure import Evaluate, Progress, evaluate_accuracy, measure_variants
from greenml.compress.options import CompressOptions
from greenml.compress.pareto import pareto_front, recommend
from greenml.compress.result import CompressionResult
from greenml.compress.techniques import TECHNIQUES, describe, load_builder
from greenml.compress.tensors import (
    as_args,
    batch_size,
    device_of,
    param_count,
    require_torch,
    state_dict_bytes,
    torch_predict,
)
from greenml.compress.variants import (
    BASELINE,
    BuildContext,
    Built,
    Predict,
    Variant,
)
from greenml.errors import ConfigError, GreenmlError, NotApplicable
from greenml.measure.meter import Meter

DEFAULT_TECHNIQUES = tuple(TECHNIQUES)
METER_SAMPLE_HZ = 10.0


def compress(
    model: Any,
    evaluate: Evaluate,
    example_inputs: Any,
    *,
    techniques: Iterable[str] | str | None = None,
    train_data: Any = None,
    student: Any = None,
    max_accuracy_drop: float = 1.0,
    meter: Any = None,
    repeats: int = 20,
    options: CompressOptions | None = None,
    progress: Progress | None = None,
) -> CompressionResult:
    """Build compressed variants of ``model``, measure each, and recommend one.

    Args:
        model: A ``torch.nn.Module``; put in eval mode while measured, its
            mode restored afterwards; never modified otherwise.
        evaluate: ``evaluate(predict) -> accuracy in percent`` (0–100), where
            ``predict(*inputs)`` is called like the model and returns float32
            torch outputs on the model's device.
        example_inputs: One batch, a tensor or a tuple of tensors (the model's
            positional arguments); its first dimension counts the items.
        techniques: Names among ``int8 bf16 fp16 prune sparse24 distill onnx
            onnx-int8`` (a list or a comma-separated string); all by default.
        train_data: ``(inputs, labels)`` tensors or an iterable of such
            batches, for distillation and for fine-tuning after pruning.
        student: The student to distil into (default: a narrower copy of an
            ``nn.Sequential`` MLP).
        max_accuracy_drop: The accuracy budget, in percentage points.
        meter: A :class:`greenml.Meter`; by default one over this machine's
            sensors sampling at 10 Hz, closed at the end.
        repeats: Least calls of the example batch per variant and round.
        options: Measurement and technique knobs (:class:`CompressOptions`).
        progress: Called with a short line at each step (the CLI prints them).

    Raises:
        ConfigError: Unknown technique, bad budget or inputs, or a model that
            fails on its own example inputs.
        MissingExtra: torch is not installed.
    """
    torch = require_torch()

    names = resolve_techniques(techniques)
    if not math.isfinite(max_accuracy_drop) or max_accuracy_drop < 0:
        raise ConfigError(
            f"max_accuracy_drop must be >= 0 percentage points, got {max_accuracy_drop}"
        )
    if repeats < 1:
        raise ConfigError(f"repeats must be at least 1, got {repeats}")
    if not isinstance(model, torch.nn.Module):
        raise ConfigError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not callable(evaluate):
        raise ConfigError("evaluate must be callable: evaluate(predict) -> accuracy in percent")
    args = as_args(example_inputs)
    options = options or CompressOptions()
    say = progress or (lambda _line: None)
    was_training = model.training
    model.eval()
    own_meter = meter is None
    threads = torch.get_num_threads()
    if options.threads is not None:
        torch.set_num_threads(options.threads)
    try:
        with torch.no_grad():
            try:
                output = model(*args)
            except Exception as exc:
                raise ConfigError(
                    f"the model fails on its example_inputs: {type(exc).__name__}: {exc}"
                ) from exc
        if own_meter:
            meter = Meter(sample_hz=METER_SAMPLE_HZ)
        ctx = BuildContext(model, args, output, options, train_data, student)
        entries: list[tuple[Variant, Predict | None]] = [(_baseline(model), torch_predict(model))]
        for name in names:
            say(f"building {name}: {describe(name)}")
            entries.append(_build(name, ctx, meter))
        for variant, predict in entries:
            if variant.ok and predict is not None:
                say(f"evaluating {variant.name}")
                evaluate_accuracy(variant, predict, evaluate)
        live: list[tuple[Variant, Predict]] = []
        for variant, maybe in entries:
            if maybe is not None:
                live.append((variant, maybe))
        measure_variants(live, args, meter, options, repeats, say)
        variants = [v for v, _ in entries]
        return _result(variants, max_accuracy_drop, args, model, options, repeats, meter)
    finally:
        if own_meter and meter is not None:
            meter.close()
        model.train(was_training)
        torch.set_num_threads(threads)


def resolve_techniques(techniques: Iterable[str] | str | None) -> list[str]:
    """Technique names, checked, in the order given, without repeats.

    Raises:
        ConfigError: An unknown name.
    """
    if techniques is None:
        return list(DEFAULT_TECHNIQUES)
    raw = techniques.split(",") if isinstance(techniques, str) else list(techniques)
    names: list[str] = []
    for item in raw:
        name = item.strip().lower()
        if not name:
            continue
        if name not in TECHNIQUES:
            known = ", ".join(TECHNIQUES)
            raise ConfigError(f"unknown technique {item.strip()!r}; choose among: {known}")
        if name not in names:
            names.append(name)
    if not names:
        raise ConfigError("no technique given")
    return names


def _baseline(model: Any) -> Variant:
    variant = Variant(BASELINE, describe(BASELINE))
    variant.size_bytes, variant.size_source = state_dict_bytes(model), "state_dict"
    variant.params = param_count(model)
    return variant


def _build(name: str, ctx: BuildContext, meter: Any) -> tuple[Variant, Predict | None]:
    """One technique's variant: built (its build's energy measured), skipped or failed."""
    variant = Variant(name, describe(name))
    built: Built | None = None
    with meter.window(f"greenml-compress/build/{name}") as window:
        try:
            built = load_builder(name)(ctx)
        except NotApplicable as exc:
            variant.status, variant.reason = "skipped", str(exc)
        except GreenmlError as exc:
            variant.fail(str(exc))
        except Exception as exc:
            variant.fail(f"build failed: {type(exc).__name__}: {' '.join(str(exc).split())}")
    if built is None:
        return variant, None
    m = window.measurement
    if m is not None and m.components:
        variant.build_energy_j, variant.build_duration_s = m.total_j, m.duration_s
    variant.size_bytes, variant.size_source = built.size_bytes, built.size_source
    variant.params = built.params
    variant.notes.extend(built.notes)
    return variant, built.predict


def _result(
    variants: list[Variant],
    max_drop: float,
    args: tuple[Any, ...],
    model: Any,
    options: CompressOptions,
    repeats: int,
    meter: Any,
) -> CompressionResult:
    base = variants[0]
    for v in variants:
        if v.ok and v.accuracy_pct is not None and base.ok and base.accuracy_pct is not None:
            v.accuracy_drop_pp = base.accuracy_pct - v.accuracy_pct
    front = set(pareto_front(variants))
    for v in variants:
        v.pareto = v.name in front
    return CompressionResult(
        variants=variants,
        recommendation=recommend(variants, max_drop),
        max_accuracy_drop_pp=max_drop,
        batch_size=batch_size(args),
        device=str(device_of(model)),
        rounds=options.rounds,
        repeats=repeats,
        min_window_s=options.min_window_s,
        threads=options.threads,
        meter_notes=list(getattr(meter, "notes", [])),
    )


__all__ = ["DEFAULT_TECHNIQUES", "compress", "resolve_techniques"]

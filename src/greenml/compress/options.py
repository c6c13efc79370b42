"""Knobs of ``compress``: how long to measure, how hard to prune, how to distil."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from greenml.errors import ConfigError


@dataclass(frozen=True)
class CompressOptions:
    """Tuning of the techniques and of the measurement.

    Attributes:
        rounds: Measurement rounds; variants are interleaved, round by round,
            so slow drifts (thermal, other load) hit every variant alike.
        min_window_s: Least duration of one variant's window in a round (a
            sampled power sensor needs a few samples per window).
        warmup: Untimed calls before the first window (allocations, caches).
        prune_ratio: Share of channels/neurons removed from each prunable layer.
        finetune_epochs: Epochs of recovery training after pruning (KD from
            the baseline; only with training data).
        temperature: Distillation temperature T of the soft targets.
        alpha: Weight of the soft (KL) term; ``1 - alpha`` weighs the labels.
        distill_epochs: Epochs of student training.
        learning_rate: Adam learning rate for distillation and fine-tuning.
        batch_size: Mini-batch size when the training data are tensors.
        student_width: Width of the default student's hidden layers,
            relative to the teacher's.
        seed: Seed of the student's initialization and of data shuffling.
        threads: Intra-op threads of torch and ONNX Runtime during the whole
            run (``None``: leave torch's setting and ONNX Runtime's default).
            One thread gives steadier figures on a small or busy machine.
    """

    rounds: int = 3
    min_window_s: float = 1.0
    warmup: int = 3
    prune_ratio: float = 0.5
    finetune_epochs: int = 10
    temperature: float = 4.0
    alpha: float = 0.7
    distill_epochs: int = 30
    learning_rate: float = 1e-3
    batch_size: int = 64
    student_width: float = 0.5
    seed: int = 0
    threads: int | None = None

    def __post_init__(self) -> None:
        positive_ints = ("rounds", "distill_epochs", "batch_size")
        for name in positive_ints:
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in ("warmup", "finetune_epochs"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be 0 or more, got {getattr(self, name)}")
        if self.threads is not None and self.threads < 1:
            raise ConfigError(f"threads must be at least 1, got {self.threads}")
        _check_range("min_window_s", self.min_window_s, 0.0, math.inf)
        _check_range("prune_ratio", self.prune_ratio, 0.0, 1.0, open_high=True)
        _check_range("alpha", self.alpha, 0.0, 1.0)
        _check_range("student_width", self.student_width, 0.0, 1.0, open_low=True)
        for name in ("temperature", "learning_rate"):
            _check_range(name, getattr(self, name), 0.0, math.inf, open_low=True)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check_range(
    name: str,
    value: float,
    low: float,
    high: float,
    open_low: bool = False,
    open_high: bool = False,
) -> None:
    ok = math.isfinite(value)
    ok = ok and (value > low if open_low else value >= low)
    ok = ok and (value < high if open_high else value <= high)
    if not ok:
        low_b, high_b = "(" if open_low else "[", ")" if open_high else "]"
        raise ConfigError(f"{name} must be in {low_b}{low:g}, {high:g}{high_b}, got {value!r}")

"""The grid of a software-knob sweep: precision × batch size × torch.compile × loader workers.

A :class:`SweepConfig` is one point of the grid; the user's ``make_step``
factory reads ``batch_size``, ``workers`` and ``device`` from it to build its
model, optimizer and data loader. greenml applies the other knobs
(``precision``, ``compile``) itself; see :mod:`greenml.optimize.sweep.run`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from greenml.errors import ConfigError

#: The precisions a sweep knows, from the most to the least exact.
PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
DEVICES = ("cpu", "cuda")

_ALIASES = {
    "float32": "fp32",
    "float": "fp32",
    "tensorfloat32": "tf32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
}


def normalize_precision(text: str) -> str:
    """``BF16``, ``bfloat16`` … → one of :data:`PRECISIONS`; ConfigError otherwise."""
    key = text.strip().lower().replace("-", "").replace("_", "")
    key = _ALIASES.get(key, key)
    if key not in PRECISIONS:
        raise ConfigError(f"unknown precision {text!r}; use one of {', '.join(PRECISIONS)}")
    return key


def check_device(device: str) -> str:
    """``cpu`` or ``cuda``; ConfigError otherwise."""
    if device not in DEVICES:
        raise ConfigError(f"device must be 'cpu' or 'cuda', not {device!r}")
    return device


@dataclass(frozen=True)
class SweepConfig:
    """One configuration of the sweep.

    Attributes:
        precision: ``fp32``, ``tf32`` (CUDA only), ``bf16`` or ``fp16`` autocast.
        batch_size: Samples per step; the factory builds its loader with it.
        compile: Whether greenml compiles the step's model with ``torch.compile``.
        workers: ``num_workers`` of the factory's data loader.
        device: ``cpu`` or ``cuda``: where the factory puts the model and data.
    """

    precision: str = "fp32"
    batch_size: int = 32
    compile: bool = False
    workers: int = 0
    device: str = "cpu"

    def __post_init__(self) -> None:
        object.__setattr__(self, "precision", normalize_precision(self.precision))
        check_device(self.device)
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int):
            raise ConfigError(f"batch size must be an integer, not {self.batch_size!r}")
        if self.batch_size < 1:
            raise ConfigError(f"batch size must be at least 1, not {self.batch_size}")
        if isinstance(self.workers, bool) or not isinstance(self.workers, int):
            raise ConfigError(f"loader workers must be an integer, not {self.workers!r}")
        if self.workers < 0:
            raise ConfigError(f"loader workers must be >= 0, not {self.workers}")

    @property
    def label(self) -> str:
        """A short name, e.g. ``bf16 b64 compiled w2``."""
        mode = "compiled" if self.compile else "eager"
        return f"{self.precision} b{self.batch_size} {mode} w{self.workers}"

    def on(self, device: str) -> SweepConfig:
        """The same configuration on ``device``."""
        return replace(self, device=check_device(device))

    def to_dict(self) -> dict[str, Any]:
        return {
            "precision": self.precision,
            "batch_size": self.batch_size,
            "compile": self.compile,
            "workers": self.workers,
            "device": self.device,
        }


def _unique(values: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(dict.fromkeys(values))


@dataclass(frozen=True)
class SweepGrid:
    """The axes of the sweep; :meth:`configs` is their cartesian product.

    Attributes:
        precisions: Among :data:`PRECISIONS` (aliases such as ``bfloat16`` accepted).
        batch_sizes: Positive integers.
        compile: ``False`` (eager), ``True`` (``torch.compile``) or both.
        workers: Data-loader worker counts.
    """

    precisions: Sequence[str] = ("fp32",)
    batch_sizes: Sequence[int] = (32,)
    compile: Sequence[bool] = (False,)
    workers: Sequence[int] = (0,)

    def __post_init__(self) -> None:
        axes = {
            "precision": self.precisions,
            "batch size": self.batch_sizes,
            "compile": self.compile,
            "workers": self.workers,
        }
        for name, values in axes.items():
            if isinstance(values, (str, bytes)) or not values:
                raise ConfigError(f"the sweep grid has no {name} value: give at least one")
        object.__setattr__(
            self, "precisions", _unique(normalize_precision(p) for p in self.precisions)
        )
        object.__setattr__(self, "batch_sizes", _unique(self.batch_sizes))
        object.__setattr__(self, "compile", _unique(bool(c) for c in self.compile))
        object.__setattr__(self, "workers", _unique(self.workers))
        self.configs()  # validates every value

    def configs(self, device: str = "cpu") -> list[SweepConfig]:
        """Every configuration, batch size outermost and precision innermost."""
        return [
            SweepConfig(precision, batch, compiled, workers, device)
            for batch, workers, compiled, precision in itertools.product(
                self.batch_sizes, self.workers, self.compile, self.precisions
            )
        ]


def as_configs(grid: SweepGrid | Sequence[SweepConfig], device: str) -> list[SweepConfig]:
    """The configurations of ``grid`` on ``device``, duplicates dropped; ConfigError if none."""
    if isinstance(grid, SweepGrid):
        configs = grid.configs(device)
    else:
        for c in grid:
            if not isinstance(c, SweepConfig):
                raise ConfigError(f"a sweep grid holds SweepConfig objects, not {c!r:.60}")
        configs = [c.on(device) for c in grid]
    configs = list(_unique(configs))
    if not configs:
        raise ConfigError("the sweep grid is empty: give at least one configuration")
    return configs

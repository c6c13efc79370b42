"""The plan of the power-limit optimizer: which limits, how many steps, which objective."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from greenml.errors import ConfigError
from greenml.optimize.ddp import all_reduce
from greenml.optimize.gpu_control import GpuLimits, check_limit


def limits_to_profile(
    gpus: Sequence[GpuLimits], min_w: float | None, max_w: float | None, step_w: float
) -> list[float]:
    """The limits to profile: the range every GPU (and every rank) allows, high to low.

    Raises:
        ConfigError: ``min_w`` or ``max_w`` outside a GPU's range (named), or a bad step.
    """
    for gpu in gpus:
        for wanted in (min_w, max_w):
            if wanted is not None:
                check_limit(gpu, wanted)
    lo = max([g.min_w for g in gpus] + ([min_w] if min_w is not None else []))
    hi = min([g.max_w for g in gpus] + ([max_w] if max_w is not None else []))
    lo, hi = all_reduce([lo, hi], ["max", "min"])
    return profile_limits(lo, hi, step_w)


def profile_limits(min_w: float, max_w: float, step_w: float) -> list[float]:
    """Limits to profile: ``max_w``, ``max_w − step_w`` ... down to ``min_w`` (included)."""
    if step_w <= 0:
        raise ConfigError(f"the power-limit step must be > 0 W, not {step_w:g}")
    if min_w > max_w:
        raise ConfigError(f"no power limit allowed: lowest {min_w:g} W > highest {max_w:g} W")
    limits = [max_w]
    while limits[-1] - step_w >= min_w - 1e-9:
        limits.append(round(limits[-1] - step_w, 3))
    if limits[-1] > min_w:
        limits.append(min_w)
    return limits


@dataclass(frozen=True)
class PowerPlan:
    """What the optimizer will do: the GPUs, the limits to profile and for how long."""

    gpus: tuple[GpuLimits, ...]
    limits_w: tuple[float, ...]
    warmup_steps: int
    profile_steps: int
    eta: float
    max_slowdown: float | None
    max_power_w: float
    ranks: int
    dry_run: bool

    @property
    def steps(self) -> int:
        """Steps spent profiling at most (fewer when a slowdown bound stops it early)."""
        return len(self.limits_w) * (self.warmup_steps + self.profile_steps)

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpus": [g.to_dict() for g in self.gpus],
            "limits_w": list(self.limits_w),
            "warmup_steps": self.warmup_steps,
            "profile_steps": self.profile_steps,
            "profiling_steps": self.steps,
            "objective": self.objective,
            "eta": self.eta,
            "max_slowdown": self.max_slowdown,
            "max_power_w": self.max_power_w,
            "ranks": self.ranks,
            "dry_run": self.dry_run,
        }

    @property
    def objective(self) -> str:
        if self.max_slowdown is not None:
            return f"least energy within {self.max_slowdown:.1%} slowdown"
        return f"least η·E + (1−η)·P_max·T, η = {self.eta:g}, P_max = {self.max_power_w:g} W"

"""What one configuration of a sweep gave: joules and seconds per sample, or why none."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from greenml.optimize.sweep.grid import SweepConfig

Status = Literal["ok", "failed", "skipped"]
OK: Status = "ok"
FAILED: Status = "failed"
SKIPPED: Status = "skipped"


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float (a diverged loss) as ``None``, for strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


@dataclass
class ConfigResult:
    """The outcome of one configuration (treat as read-only).

    Attributes:
        config: The configuration.
        status: ``ok``; ``failed`` (it raised: OOM, compile error ...) or
            ``skipped`` (greenml did not run it: the knob does not exist here).
        reason: Why it failed or was skipped.
        warmup_steps: Unmeasured steps run first (compilation happens there).
        steps: Measured steps.
        samples: Samples the measured steps processed (what the step returned).
        duration_s: Wall time of the measured steps.
        energy_j: Energy of the measured steps, every measured component summed.
        method: How that energy was obtained (the weakest method of the components).
        uncertainty_rel: Relative uncertainty of ``energy_j`` (0.3 = ±30 %).
        throughput_spread_rel: How steady the throughput was: the relative
            standard deviation of samples/s over the four quarters of the
            measured window (CPU only: on a GPU step times are launch times;
            ``None`` under 8 steps). A high spread means another load shared
            the machine or the window was too short.
        components_j: Energy per component (``cpu``, ``dram``, ``gpu``).
        losses: Loss of each measured step, when the step returned one.
        autocast: ``forward`` (the model's forward ran under autocast), ``step``
            (the whole step call did) or ``""`` (no autocast).
        notes: Anything else the reader should know about this configuration.
    """

    config: SweepConfig
    status: Status = OK
    reason: str = ""
    warmup_steps: int = 0
    steps: int = 0
    samples: int = 0
    duration_s: float = 0.0
    energy_j: float = 0.0
    method: str = ""
    uncertainty_rel: float = 0.0
    throughput_spread_rel: float | None = None
    components_j: dict[str, float] = field(default_factory=dict)
    losses: list[float] = field(default_factory=list)
    autocast: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def energy_per_sample_j(self) -> float:
        """Joules per sample (``nan`` without samples)."""
        return self.energy_j / self.samples if self.samples else math.nan

    @property
    def time_per_sample_s(self) -> float:
        """Seconds per sample (``nan`` without samples)."""
        return self.duration_s / self.samples if self.samples else math.nan

    @property
    def samples_per_s(self) -> float:
        """Throughput over the measured steps (``nan`` without time)."""
        return self.samples / self.duration_s if self.duration_s > 0 else math.nan

    @property
    def power_w(self) -> float:
        """Mean power over the measured steps."""
        return self.energy_j / self.duration_s if self.duration_s > 0 else math.nan

    @property
    def loss(self) -> float | None:
        """Mean loss over the measured steps, ``None`` when the step returned none."""
        return sum(self.losses) / len(self.losses) if self.losses else None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"config": self.config.to_dict(), "status": self.status}
        if self.reason:
            out["reason"] = self.reason
        if self.ok:
            out.update(
                warmup_steps=self.warmup_steps,
                steps=self.steps,
                samples=self.samples,
                duration_s=self.duration_s,
                energy_j=self.energy_j,
                energy_per_sample_j=self.energy_per_sample_j,
                samples_per_s=self.samples_per_s,
                throughput_spread_rel=self.throughput_spread_rel,
                power_w=self.power_w,
                method=self.method,
                uncertainty_rel=self.uncertainty_rel,
                components_j=dict(self.components_j),
                autocast=self.autocast or None,
                loss_mean=self.loss,
                loss_last=self.losses[-1] if self.losses else None,
            )
        if self.notes:
            out["notes"] = list(self.notes)
        return json_safe(out)  # type: ignore[no-any-return]

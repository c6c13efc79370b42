"""From measured configurations to advice: the accuracy check and the pick per η.

The pick minimizes Zeus's cost per sample, ``η·E + (1 − η)·P_max·T``
(:func:`greenml.optimize.objective.energy_time_cost`): η = 1 takes the least
joules per sample, η = 0 the most samples per second.

A lower precision is never presented as free. Its loss over the measured
steps is compared with the fp32 run of the same batch size, compile mode and
workers (same seed, same batches, the same number of steps): a change above
the tolerance is a warning and the configuration is left out of the picks; a
configuration that could not be compared says so in its pick.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from greenml.optimize.objective import check_eta, energy_time_cost
from greenml.optimize.sweep.result import ConfigResult, json_safe

DEFAULT_ETAS = (0.0, 0.25, 0.5, 0.75, 1.0)
DEFAULT_LOSS_TOLERANCE = 0.05

CheckStatus = Literal["ok", "changed", "unchecked"]


@dataclass(frozen=True)
class LossCheck:
    """A lower-precision run's loss against its fp32 twin.

    Attributes:
        label: The checked configuration.
        status: ``ok`` (within tolerance), ``changed`` (beyond it, or not finite)
            or ``unchecked`` (no loss, or no fp32 twin to compare with).
        message: One line for people.
        change_rel: |loss − fp32 loss| / |fp32 loss| over the common steps.
        steps: Number of measured steps compared.
    """

    label: str
    status: CheckStatus
    message: str
    change_rel: float | None = None
    steps: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.label,
            "status": self.status,
            "message": self.message,
            "change_rel": self.change_rel,
            "steps": self.steps,
        }


def _twin_key(r: ConfigResult) -> tuple[int, bool, int]:
    return r.config.batch_size, r.config.compile, r.config.workers


def check_losses(
    results: Sequence[ConfigResult], tolerance_rel: float = DEFAULT_LOSS_TOLERANCE
) -> dict[str, LossCheck]:
    """A :class:`LossCheck` per successful non-fp32 configuration, by label."""
    references = {
        _twin_key(r): r for r in results if r.ok and r.config.precision == "fp32"
    }
    checks: dict[str, LossCheck] = {}
    for r in results:
        if not r.ok or r.config.precision == "fp32":
            continue
        label = r.config.label
        ref = references.get(_twin_key(r))
        if not r.losses:
            checks[label] = LossCheck(label, "unchecked", "accuracy not checked: no loss returned")
        elif ref is None or not ref.losses:
            checks[label] = LossCheck(
                label,
                "unchecked",
                "accuracy not checked: no fp32 run with a loss at the same batch size, "
                "compile mode and workers",
            )
        else:
            checks[label] = _compare(label, r.losses, ref.losses, tolerance_rel)
    return checks


def _compare(
    label: str, losses: list[float], reference: list[float], tolerance_rel: float
) -> LossCheck:
    n = min(len(losses), len(reference))
    mine, theirs = sum(losses[:n]) / n, sum(reference[:n]) / n
    if not math.isfinite(mine):
        return LossCheck(label, "changed", f"loss is {mine} (fp32: {theirs:.4g})", None, n)
    change = abs(mine - theirs) / max(abs(theirs), 1e-12)
    verdict = f"mean loss over {n} steps {mine:.4g} vs fp32 {theirs:.4g} ({change:.1%} apart)"
    if change > tolerance_rel:
        return LossCheck(
            label, "changed", f"{verdict}: above the {tolerance_rel:.0%} tolerance", change, n
        )
    return LossCheck(
        label,
        "ok",
        f"{verdict}: a short-run loss check; confirm on validation accuracy",
        change,
        n,
    )


@dataclass(frozen=True)
class Recommendation:
    """The configuration of least cost per sample at one η.

    Attributes:
        eta: Weight of energy against time, in [0, 1].
        result: The chosen configuration's measurements.
        cost_per_sample_j: η·E + (1 − η)·P_max·T per sample, in joules.
        caveat: What the pick does not prove (an unchecked precision ...).
    """

    eta: float
    result: ConfigResult
    cost_per_sample_j: float
    caveat: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "eta": self.eta,
            "config": self.result.config.to_dict(),
            "label": self.result.config.label,
            "energy_per_sample_j": self.result.energy_per_sample_j,
            "samples_per_s": self.result.samples_per_s,
            "cost_per_sample_j": self.cost_per_sample_j,
            "caveat": self.caveat or None,
        }


def recommend(
    results: Sequence[ConfigResult],
    eta: float,
    max_power_w: float,
    checks: dict[str, LossCheck] | None = None,
) -> Recommendation | None:
    """The successful configuration of least cost per sample, ``None`` when none qualifies.

    Configurations whose loss check says ``changed`` are left out.

    Raises:
        ConfigError: ``eta`` outside [0, 1].
    """
    check_eta(eta)
    checks = checks or {}
    candidates = [
        r
        for r in results
        if r.ok and r.samples > 0 and _status(checks, r) != "changed"
    ]
    if not candidates:
        return None

    def cost(r: ConfigResult) -> float:
        return energy_time_cost(r.energy_per_sample_j, r.time_per_sample_s, eta, max_power_w)

    best = min(candidates, key=lambda r: (cost(r), r.energy_per_sample_j, r.time_per_sample_s))
    return Recommendation(eta, best, cost(best), _caveat(best, checks.get(best.config.label)))


def _caveat(r: ConfigResult, check: LossCheck | None) -> str:
    if r.config.precision == "fp32":
        return ""
    if check is None:
        return "accuracy not checked"
    if check.status == "ok" and check.change_rel is not None:
        change = "<0.1%" if check.change_rel < 0.001 else f"{check.change_rel:.1%}"
        return f"loss {change} from fp32 over {check.steps} steps: confirm on validation accuracy"
    return check.message


def _status(checks: dict[str, LossCheck], r: ConfigResult) -> str | None:
    check = checks.get(r.config.label)
    return check.status if check else None


@dataclass
class SweepResult:
    """Every configuration of a sweep, P_max, and the advice drawn from them.

    Attributes:
        results: One per configuration, in grid order.
        device: ``cpu`` or ``cuda``.
        max_power_w: P_max of the cost, in watts.
        max_power_source: Where P_max comes from (a TDP table, NVML, measured).
        loss_tolerance_rel: The loss change above which a precision is flagged.
        notes: Measurement notes (which sensors, what they could not see).
    """

    results: list[ConfigResult]
    device: str
    max_power_w: float
    max_power_source: str
    loss_tolerance_rel: float = DEFAULT_LOSS_TOLERANCE
    notes: list[str] = field(default_factory=list)

    @property
    def loss_checks(self) -> dict[str, LossCheck]:
        return check_losses(self.results, self.loss_tolerance_rel)

    @property
    def warnings(self) -> list[str]:
        """One line per precision whose loss changed beyond the tolerance."""
        checks = self.loss_checks.values()
        return [f"{c.label}: {c.message}" for c in checks if c.status == "changed"]

    def recommend(self, eta: float) -> Recommendation | None:
        """The configuration to use at ``eta`` (see :func:`recommend`)."""
        return recommend(self.results, eta, self.max_power_w, self.loss_checks)

    def recommendations(self, etas: Sequence[float] = DEFAULT_ETAS) -> list[Recommendation]:
        """One pick per η, skipping the η values nothing qualifies for."""
        picks = (self.recommend(eta) for eta in etas)
        return [p for p in picks if p is not None]

    def to_dict(self, etas: Sequence[float] = DEFAULT_ETAS) -> dict[str, Any]:
        """Everything as JSON-ready data (non-finite floats as ``None``)."""
        out = {
            "device": self.device,
            "max_power_w": self.max_power_w,
            "max_power_source": self.max_power_source,
            "loss_tolerance_rel": self.loss_tolerance_rel,
            "configs": [r.to_dict() for r in self.results],
            "loss_checks": [c.to_dict() for c in self.loss_checks.values()],
            "recommendations": [r.to_dict() for r in self.recommendations(etas)],
            "warnings": self.warnings,
            "notes": list(self.notes),
        }
        return json_safe(out)  # type: ignore[no-any-return]

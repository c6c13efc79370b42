"""Which variants are worth it: the accuracy-vs-energy Pareto front and the recommendation.

The recommendation is the lowest energy per inference among the variants within
``max_accuracy_drop`` percentage points of the baseline's accuracy (the baseline
itself included: keeping it is a valid answer). When the saving is smaller than
twice the round-to-round spread, the recommendation says so; variants within one
spread of the chosen one are named as ties. Both tests are the cautious side of
their claim: a saving must stand clear of the noise, a tie must sit inside it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from greenml.compress.variants import BASELINE, Variant

NOISE_SIGMAS = 2.0
"""A saving smaller than this many combined standard errors may be noise."""
TIE_SIGMAS = 1.0
"""Variants closer than this many combined standard errors are named as ties."""


@dataclass(frozen=True)
class Recommendation:
    """The variant to use, and why (``variant`` is ``None`` when nothing qualifies)."""

    variant: str | None
    reason: str
    energy_saving_rel: float | None = None
    accuracy_drop_pp: float | None = None
    within_noise: bool = False
    tied: tuple[str, ...] = ()
    """Other variants within the budget whose energy is within the noise of the chosen one."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _scored(variants: list[Variant]) -> list[Variant]:
    return [
        v for v in variants
        if v.ok and v.accuracy_pct is not None and v.energy_per_1k_j is not None
    ]  # fmt: skip


def pareto_front(variants: list[Variant]) -> list[str]:
    """Names of the variants no other beats on both accuracy (higher) and energy (lower)."""
    scored = _scored(variants)
    front = []
    for v in scored:
        dominated = any(
            _dominates(w, v) for w in scored if w is not v
        )
        if not dominated:
            front.append(v.name)
    return front


def _dominates(w: Variant, v: Variant) -> bool:
    wa, va = w.accuracy_pct or 0.0, v.accuracy_pct or 0.0
    we, ve = w.energy_per_1k_j or 0.0, v.energy_per_1k_j or 0.0
    return wa >= va and we <= ve and (wa > va or we < ve)


def recommend(variants: list[Variant], max_accuracy_drop_pp: float) -> Recommendation:
    """The lowest-energy variant within the accuracy budget, with a sentence saying why."""
    base = next((v for v in variants if v.name == BASELINE), None)
    if base is None or not base.ok or base.accuracy_pct is None:
        why = base.reason if base is not None and base.reason else "it was not measured"
        return Recommendation(
            None,
            f"no recommendation: the baseline's accuracy is unknown ({why}), so the "
            "accuracy budget cannot be checked",
        )
    if base.energy_per_1k_j is None:
        return Recommendation(None, "no recommendation: no energy was measured (no sensor)")
    budget = max_accuracy_drop_pp + 1e-9
    scored = _scored(variants)
    within = [v for v in scored if (v.accuracy_drop_pp or 0.0) <= budget]
    over = [v.name for v in scored if v not in within]
    best = min(within, key=lambda v: (v.energy_per_1k_j or 0.0, v.name != BASELINE))
    over_text = f"; over the budget: {', '.join(over)}" if over else ""
    if best is base:
        return Recommendation(
            BASELINE,
            f"keep the baseline: no variant within {max_accuracy_drop_pp:g} pp of its accuracy "
            f"uses less energy per inference{over_text}",
            0.0,
            0.0,
        )
    saving = 1.0 - (best.energy_per_1k_j or 0.0) / base.energy_per_1k_j
    noise = _within_noise(best, base)
    drop = best.accuracy_drop_pp or 0.0
    change = 0.0 - drop + 0.0  # never "-0.00"
    reason = (
        f"{best.name}: {saving:.0%} less energy per inference than the baseline, accuracy "
        f"{best.accuracy_pct:.2f} % ({change:+.2f} pp; budget {max_accuracy_drop_pp:g} pp)"
        f"{over_text}"
    )
    if noise:
        reason += (
            f"; the saving is within {NOISE_SIGMAS:g}× the round-to-round spread, so it may "
            "be noise: measure more rounds before relying on it"
        )
    others = [v for v in within if v is not best and v is not base]
    tied = tuple(v.name for v in others if _within_noise(v, best, TIE_SIGMAS))
    if tied:
        reason += f"; as good within the noise: {', '.join(tied)}"
    return Recommendation(best.name, reason, saving, drop, noise, tied)


def _within_noise(v: Variant, base: Variant, sigmas: float = NOISE_SIGMAS) -> bool:
    """Whether ``|E_v − E_base|`` is under ``sigmas`` combined standard errors."""
    if v.energy_spread_rel is None or base.energy_spread_rel is None:
        return False
    ev, eb = v.energy_per_1k_j or 0.0, base.energy_per_1k_j or 0.0
    sigma = math.hypot(ev * v.energy_spread_rel, eb * base.energy_spread_rel)
    return abs(eb - ev) < sigmas * sigma

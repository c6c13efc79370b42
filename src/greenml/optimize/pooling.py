"""How much groups truly differ: the between-group variance τ² of a random-effects model.

Each group *i* (a batch size) has an observed mean ``y_i`` with a known
sampling variance ``v_i``; the true means are drawn from N(μ, τ²). Two
estimates of τ²:

* :func:`dersimonian_laird_tau2`, the usual moment estimate. It is truncated
  at zero, and on groups that differ by less than their noise it is *exactly*
  zero in a large share of samples: every group is then taken to share one
  mean, which is wrong as soon as they differ a little.
* :func:`boundary_avoiding_tau2`, the mode of the likelihood of the group
  means (μ at its estimate) times a Gamma(2, λ) prior on τ with λ → 0, i.e.
  a density ∝ τ near zero (Chung, Rabe-Hesketh, Dorie, Gelman and Liu,
  *Psychometrika* 78, 2013). The prior vanishes at τ = 0, so the estimate is
  always positive; it has no tuned constant. Its score is that of the
  likelihood plus 1/(2τ²), which makes up for the degree of freedom spent on
  μ: once the groups clearly differ (τ² ≫ v) it lands on the REML estimate
  (and near DerSimonian–Laird's); with equal variances v and identical means
  it is v/(k − 1), about one standard error of a group mean over √(k − 1).
  The restricted (REML) likelihood under the same prior would give v/(k − 2),
  no mode at all for two groups, and (k − 1)/(k − 2) × REML when the groups
  differ; in the batch-size optimizer it explored more for no gain.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from greenml.errors import ConfigError

__all__ = ["boundary_avoiding_tau2", "dersimonian_laird_tau2", "penalized_score"]

_STEPS = 100  # bisection steps on log τ²: far below float precision of the root


def _check(means: Sequence[float], variances: Sequence[float]) -> None:
    if len(means) != len(variances):
        raise ConfigError(f"{len(means)} means but {len(variances)} variances")
    if not all(v > 0 and math.isfinite(v) for v in variances):
        raise ConfigError("sampling variances must be positive and finite")
    if not all(math.isfinite(m) for m in means):
        raise ConfigError("means must be finite")


def dersimonian_laird_tau2(means: Sequence[float], variances: Sequence[float]) -> float:
    """The DerSimonian–Laird moment estimate of τ² (zero when Q ≤ k − 1).

    Raises:
        ConfigError: Lengths differ, or a variance is not positive and finite.
    """
    _check(means, variances)
    if len(means) < 2:
        return 0.0
    weights = [1.0 / v for v in variances]
    total = sum(weights)
    pooled = sum(w * y for w, y in zip(weights, means, strict=True)) / total
    q = sum(w * (y - pooled) ** 2 for w, y in zip(weights, means, strict=True))
    spread = total - sum(w * w for w in weights) / total
    return max(0.0, (q - (len(means) - 1)) / spread) if spread > 0 else 0.0


def penalized_score(tau2: float, means: Sequence[float], variances: Sequence[float]) -> float:
    """Twice the derivative in τ² of the log-likelihood plus log τ.

    Σ w²(y − μ̂)² − Σ w + 1/τ², with w = 1/(v + τ²) and μ̂ the w-weighted
    mean; the estimate is where it crosses zero from above.
    """
    weights = [1.0 / (v + tau2) for v in variances]
    total = sum(weights)
    pooled = sum(w * y for w, y in zip(weights, means, strict=True)) / total
    fit = sum(w * w * (y - pooled) ** 2 for w, y in zip(weights, means, strict=True))
    return fit - total + 1.0 / tau2


def boundary_avoiding_tau2(means: Sequence[float], variances: Sequence[float]) -> float:
    """The mode of the likelihood of the means under a Gamma(2, λ → 0) prior on τ.

    Positive and finite for two groups or more; 0.0 for one (nothing to pool).

    Raises:
        ConfigError: Lengths differ, or a variance or mean is not finite
            (or a variance not positive).
    """
    _check(means, variances)
    k = len(means)
    if k < 2:
        return 0.0
    # The score is +inf at τ² → 0 and, for k ≥ 2, about (Q - (k - 1) τ²) / τ⁴ < 0 once τ²
    # passes the spread of the means plus their noise: bracket the root, bisect on log τ².
    centre = sum(means) / k
    spread = sum((y - centre) ** 2 for y in means)
    log_low = math.log(min(variances) * 1e-9)
    high = 2.0 * (max(variances) + spread)
    for _ in range(200):  # a few doublings at most for finite means
        if penalized_score(high, means, variances) <= 0:
            break
        high *= 4.0
    log_high = math.log(high)
    for _ in range(_STEPS):
        middle = 0.5 * (log_low + log_high)
        if penalized_score(math.exp(middle), means, variances) > 0:
            log_low = middle
        else:
            log_high = middle
        if log_high - log_low < 1e-12:
            break
    return math.exp(0.5 * (log_low + log_high))

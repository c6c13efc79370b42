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

Both take an optional *covariate* x_i (the batch optimizer passes log batch
size): the true means are then drawn from N(α + γ x_i, τ²), a random-effects
meta-regression, and τ² measures how far the groups stray from that line
rather than from one common mean. :func:`weighted_line` is the line's
weighted least-squares fit for given weights.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from greenml.errors import ConfigError

__all__ = [
    "Line",
    "boundary_avoiding_tau2",
    "dersimonian_laird_tau2",
    "penalized_score",
    "weighted_line",
]

_STEPS = 100  # bisection steps on log τ²: far below float precision of the root


@dataclass(frozen=True)
class Line:
    """A weighted least-squares line y = centre_y + slope (x − centre_x).

    ``weight`` is Σw (the precision of the level at ``centre_x``) and ``spread``
    Σw (x − centre_x)² (the precision of the slope; 0 when every x is the same,
    and the slope is then 0).
    """

    centre_x: float
    centre_y: float
    slope: float
    weight: float
    spread: float

    def at(self, x: float) -> float:
        """The line's value at ``x``."""
        return self.centre_y + self.slope * (x - self.centre_x)


def weighted_line(
    means: Sequence[float], weights: Sequence[float], covariate: Sequence[float] | None
) -> Line:
    """The fit of the means by a line in the covariate (a constant when it is None)."""
    total = sum(weights)
    centre_y = sum(w * y for w, y in zip(weights, means, strict=True)) / total
    if covariate is None:
        return Line(0.0, centre_y, 0.0, total, 0.0)
    centre_x = sum(w * x for w, x in zip(weights, covariate, strict=True)) / total
    spread = sum(w * (x - centre_x) ** 2 for w, x in zip(weights, covariate, strict=True))
    slope = 0.0
    if spread > 0:
        slope = (
            sum(
                w * (x - centre_x) * (y - centre_y)
                for w, x, y in zip(weights, covariate, means, strict=True)
            )
            / spread
        )
    return Line(centre_x, centre_y, slope, total, spread)


def _check(
    means: Sequence[float], variances: Sequence[float], covariate: Sequence[float] | None = None
) -> None:
    if len(means) != len(variances):
        raise ConfigError(f"{len(means)} means but {len(variances)} variances")
    if covariate is not None and (
        len(covariate) != len(means) or not all(math.isfinite(x) for x in covariate)
    ):
        raise ConfigError("the covariate needs one finite value per group")
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


def penalized_score(
    tau2: float,
    means: Sequence[float],
    variances: Sequence[float],
    covariate: Sequence[float] | None = None,
) -> float:
    """Twice the derivative in τ² of the log-likelihood plus log τ.

    Σ w²(y − ŷ)² − Σ w + 1/τ², with w = 1/(v + τ²) and ŷ the w-weighted
    mean (or, with a covariate, the w-weighted line); the estimate is where
    it crosses zero from above.
    """
    weights = [1.0 / (v + tau2) for v in variances]
    line = weighted_line(means, weights, covariate)
    xs = covariate if covariate is not None else [0.0] * len(means)
    fit = sum(w * w * (y - line.at(x)) ** 2 for w, y, x in zip(weights, means, xs, strict=True))
    return fit - line.weight + 1.0 / tau2


def boundary_avoiding_tau2(
    means: Sequence[float],
    variances: Sequence[float],
    covariate: Sequence[float] | None = None,
) -> float:
    """The mode of the likelihood of the means under a Gamma(2, λ → 0) prior on τ.

    Positive and finite for two groups or more; 0.0 for one (nothing to pool).
    With a covariate the means are fitted by a line in it (at least three
    groups: two always lie on a line, so then the covariate is ignored).

    Raises:
        ConfigError: Lengths differ, or a variance, mean or covariate is not
            finite (or a variance not positive).
    """
    _check(means, variances, covariate)
    k = len(means)
    if k < 2:
        return 0.0
    if k < 3:
        covariate = None
    # The score is +inf at τ² → 0 and, for k ≥ 2, about (Q - (k - 1) τ²) / τ⁴ < 0 once τ²
    # passes the spread of the means plus their noise: bracket the root, bisect on log τ².
    centre = sum(means) / k
    spread = sum((y - centre) ** 2 for y in means)
    log_low = math.log(min(variances) * 1e-9)
    high = 2.0 * (max(variances) + spread)
    for _ in range(200):  # a few doublings at most for finite means
        if penalized_score(high, means, variances, covariate) <= 0:
            break
        high *= 4.0
    log_high = math.log(high)
    for _ in range(_STEPS):
        middle = 0.5 * (log_low + log_high)
        if penalized_score(math.exp(middle), means, variances, covariate) > 0:
            log_low = middle
        else:
            log_high = middle
        if log_high - log_low < 1e-12:
            break
    return math.exp(0.5 * (log_low + log_high))

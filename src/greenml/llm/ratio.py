"""The prefill/decode cost ratio, estimated online from intervals with different mixes.

Each settled interval k gives ``E_k ≈ c·Δt_k + a·P_k + b·D_k``: a base power
while serving, ``a`` joules per prefill token and ``b`` per decode token (P_k,
D_k the tokens of all requests in the interval). The ratio is ``a / b``: how
many decode tokens one prefill token costs. A least-squares fit over every
interval seen so far (3×3 sufficient statistics, O(1) per interval) starts
from a stated prior, entered as pseudo-observations of ``a − prior·b = 0``
worth ``prior_weight`` intervals, so a few intervals with one kind of work
cannot swing it. The spread is one standard deviation of ``a/b`` from the
fit's covariance (delta method).

The prior, 0.05, says a prompt token costs a twentieth of a generated one:
prefill runs all prompt tokens in one compute-bound pass, decode one
memory-bound pass per token (ML.ENERGY Benchmark and the vLLM/Splitwise
phase measurements put prefill per token one to two orders of magnitude
cheaper on GPUs). It is a start, replaced by what is measured.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

PRIOR_RATIO = 0.05
PRIOR_SOURCE = "prior 0.05 (prefill ~1/20 of decode per token on GPUs; ML.ENERGY, Splitwise)"
MIN_RATIO, MAX_RATIO = 1e-4, 100.0


@dataclass(frozen=True)
class RatioEstimate:
    """The ratio in use, its spread (one standard deviation) and how many intervals made it."""

    estimate: float
    spread: float
    intervals: int
    source: str


class RatioEstimator:
    """Online least squares of interval energy on (time, prefill tokens, decode tokens).

    Args:
        prior: The ratio before any interval is seen.
        prior_weight: How many intervals' worth the prior counts.
    """

    def __init__(self, prior: float = PRIOR_RATIO, prior_weight: float = 20.0) -> None:
        if not MIN_RATIO <= prior <= MAX_RATIO:
            raise ValueError(f"prior ratio must be in [{MIN_RATIO}, {MAX_RATIO}], got {prior}")
        self.prior = prior
        self._weight = prior_weight
        self._xx = [[0.0] * 3 for _ in range(3)]
        self._xy = [0.0] * 3
        self._yy = 0.0
        self._dd = 0.0  # Σ D², to scale the prior to the data
        self._n = 0
        self._lock = threading.Lock()
        self._current = RatioEstimate(prior, prior, 0, PRIOR_SOURCE)

    def add(self, duration_s: float, prefill: float, decode: float, energy_j: float) -> None:
        """One settled interval with work in it."""
        if not (duration_s > 0 and prefill + decode > 0 and math.isfinite(energy_j)):
            return
        x = (duration_s, prefill, decode)
        with self._lock:
            for i in range(3):
                self._xy[i] += x[i] * energy_j
                for j in range(3):
                    self._xx[i][j] += x[i] * x[j]
            self._yy += energy_j * energy_j
            self._dd += decode * decode
            self._n += 1
            self._current = self._solve()

    def current(self) -> RatioEstimate:
        """The latest estimate (the prior until the data say otherwise)."""
        return self._current

    def _solve(self) -> RatioEstimate:
        n = self._n
        lam = self._weight * (self._dd / n if n and self._dd else 1.0)
        v = (0.0, 1.0, -self.prior)  # the prior's row: a - prior*b = 0
        xx = [[self._xx[i][j] + lam * v[i] * v[j] for j in range(3)] for i in range(3)]
        xx = [[xx[i][j] + (1e-9 * (1 + xx[i][i]) if i == j else 0.0) for j in range(3)]
              for i in range(3)]  # fmt: skip
        inv = _inverse3(xx)
        if inv is None:
            return RatioEstimate(self.prior, self.prior, n, PRIOR_SOURCE)
        theta = [sum(inv[i][j] * self._xy[j] for j in range(3)) for i in range(3)]
        a, b = theta[1], theta[2]
        if not (b * b > 0 and a > 0 and math.isfinite(a / b)):  # b*b underflows for a tiny b
            return RatioEstimate(self.prior, self.prior, n, PRIOR_SOURCE + "; fit not yet positive")
        # residual variance of the data rows
        fit = sum(theta[i] * self._xy[i] for i in range(3))
        quad = sum(theta[i] * self._xx[i][j] * theta[j] for i in range(3) for j in range(3))
        rss = max(0.0, self._yy - 2 * fit + quad)
        sigma2 = rss / max(1, n - 3)
        r = a / b
        g = (0.0, 1.0 / b, -a / (b * b))  # gradient of a/b
        var = sigma2 * sum(g[i] * inv[i][j] * g[j] for i in range(3) for j in range(3))
        ratio = min(MAX_RATIO, max(MIN_RATIO, r))
        spread = math.sqrt(max(0.0, var)) if n > 3 else max(self.prior, math.sqrt(max(0.0, var)))
        return RatioEstimate(ratio, spread, n, f"fitted over {n} intervals from {PRIOR_SOURCE}")


def _inverse3(m: list[list[float]]) -> list[list[float]] | None:
    (a, b, c), (d, e, f), (g, h, i) = m
    det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)
    if not math.isfinite(det) or abs(det) < 1e-300:
        return None
    cof = [
        [e * i - f * h, c * h - b * i, b * f - c * e],
        [f * g - d * i, a * i - c * g, c * d - a * f],
        [d * h - e * g, b * g - a * h, a * e - b * d],
    ]
    return [[x / det for x in row] for row in cof]

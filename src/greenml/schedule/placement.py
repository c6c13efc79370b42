"""Placing one job in one location: the best contiguous window, or pieces, under the objective.

The contiguous search evaluates every candidate start (see
:mod:`greenml.schedule.window`) on intensity and price at once, so a weighted
objective and a cost cap are both exact. An interruptible job is also placed
in pieces (:mod:`greenml.schedule.slots`), on the blended series or, under a
cap, by the Lagrangian search of :func:`greenml.schedule.objective.under_cap`;
the pieces are kept only when they beat the contiguous window.

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from greenml.accounting.series import StepSeries
from greenml.schedule.job import Job
from greenml.schedule.objective import Objective, blend, under_cap
from greenml.schedule.slots import best_pieces
from greenml.schedule.window import TIE_REL, Integral, candidate_starts, first_minimum

_CAP_TOL = 1e-9


@dataclass(frozen=True)
class Scales:
    """What each term is divided by so that carbon and cost weigh alike.

    Attributes:
        carbon: Mean intensity over the span, pooled over candidates (g/kWh).
        price: Mean absolute price over the span, pooled (USD/MWh); 1 without prices.
    """

    carbon: float
    price: float


@dataclass(frozen=True)
class Placement:
    """Where in time the job runs in one location, and what that gives.

    Attributes:
        spans_s: (start, end) of each piece, Unix seconds.
        carbon_mean: Mean forecast intensity over the pieces (g/kWh).
        price_mean: Mean price over the pieces (USD/MWh), or ``None``.
        score: The objective's value (lower is better; carbon mean under a cap).
        note: How the pieces were gridded, if not exactly.
    """

    spans_s: tuple[tuple[float, float], ...]
    carbon_mean: float
    price_mean: float | None
    score: float
    note: str = ""


def place(
    job: Job,
    carbon: StepSeries,
    price: StepSeries | None,
    objective: Objective,
    scales: Scales,
    price_cap: float | None,
) -> Placement | None:
    """The best placement of ``job`` in one location; ``None`` when no window meets the cap."""
    a, b = job.earliest_start_s, job.deadline_s
    ci = Integral(carbon, a, b, "the intensity forecast")
    pi = Integral(price, a, b, "the price series") if price is not None else None
    best = _contiguous(job, ci, pi, objective, scales, price_cap)
    if job.piece_limit > 1:
        pieces = _pieces(job, carbon, price, ci, pi, objective, scales, price_cap)
        if pieces is not None and (
            best is None or pieces.score < best.score - TIE_REL * abs(best.score)
        ):
            best = pieces
    return best


def _means(
    spans: Sequence[tuple[float, float]], duration_s: float, ci: Integral, pi: Integral | None
) -> tuple[float, float | None]:
    carbon = sum(float(ci.at(e) - ci.at(s)) for s, e in spans) / duration_s
    if pi is None:
        return carbon, None
    return carbon, sum(float(pi.at(e) - pi.at(s)) for s, e in spans) / duration_s


def _score(
    carbon: float, price: float | None, objective: Objective, scales: Scales
) -> float:
    if objective.max_cost_increase is not None or price is None:
        return carbon
    w = objective.carbon_weight
    return w * carbon / scales.carbon + (1.0 - w) * price / scales.price


def _contiguous(
    job: Job, ci: Integral, pi: Integral | None, objective: Objective, scales: Scales,
    price_cap: float | None,
) -> Placement | None:  # fmt: skip
    import numpy as np

    a, b, d = job.earliest_start_s, job.deadline_s, job.duration_s
    grids = [ci.times_s] + ([pi.times_s] if pi is not None else [])
    starts = candidate_starts(grids, a, b, d)
    cm = ci.mean(starts, starts + d)
    pm = pi.mean(starts, starts + d) if pi is not None else None
    if price_cap is not None and pm is not None:
        fits = pm <= price_cap + _CAP_TOL * max(1.0, abs(price_cap))
        if not fits.any():
            return None
        score = np.where(fits, cm, np.inf)
    elif pm is not None and objective.carbon_weight < 1.0:
        w = objective.carbon_weight
        score = w * cm / scales.carbon + (1.0 - w) * pm / scales.price
    else:
        score = cm
    i = first_minimum(score)
    start = float(starts[i])
    price_mean = float(pm[i]) if pm is not None else None
    return Placement(((start, start + d),), float(cm[i]), price_mean, float(score[i]))


def _pieces(
    job: Job, carbon: StepSeries, price: StepSeries | None, ci: Integral, pi: Integral | None,
    objective: Objective, scales: Scales, price_cap: float | None,
) -> Placement | None:  # fmt: skip
    a, b, d = job.earliest_start_s, job.deadline_s, job.duration_s

    def solve(carbon_w: float, price_w: float) -> Placement | None:
        series = blend(carbon, price, carbon_w, price_w, a, b)
        found = best_pieces(series, a, b, d, job.chunk_s, job.piece_limit)
        if found is None:
            return None
        cm, pm = _means(found.spans_s, d, ci, pi)
        return Placement(found.spans_s, cm, pm, _score(cm, pm, objective, scales), found.note)

    if price_cap is not None and price is not None:
        if solve(1.0, 0.0) is None:
            return None
        return under_cap(
            lambda lam: solve(1.0 / scales.carbon, lam / scales.price),
            lambda p: p.carbon_mean if p is not None else math.inf,
            lambda p: p.price_mean if p is not None and p.price_mean is not None else math.inf,
            price_cap + _CAP_TOL * max(1.0, abs(price_cap)),
        )
    if price is None or objective.carbon_weight == 1.0:
        return solve(1.0, 0.0)
    w = objective.carbon_weight
    return solve(w / scales.carbon, (1.0 - w) / scales.price)

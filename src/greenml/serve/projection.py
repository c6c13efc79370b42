"""The projection bound of an exact index, and how many principal directions it keeps.

For centred vectors q and x, P the top m principal directions (orthonormal
columns) and the rests' norms r_q = ‖q − PᵀPq‖, r_x likewise, Cauchy–Schwarz on the
rest gives q·x ≤ y_q·y_x with y = (P·v, r_v), so

    ‖q − x‖² ≥ ‖q‖² + ‖x‖² − 2·y_q·y_x,

one (m + 1)-wide matvec over every row. Which m (or none: the sign codes) is
measured on a sample of the index's own rows, each searched for among the
others: the cost of the pass (m per row) plus that of scoring what survives
(SCORE_COST per survivor's dimension), against SIGNS_COST for the sign codes.
"""

from __future__ import annotations

from typing import Any

WIDTHS = (16, 32, 48, 64)  # principal directions the bound may keep
SIGNS_COST = 96  # the sign pass per row, in projected dimensions (2.4 ms vs ~0.024 ms each)
SCORE_COST = 4  # scoring a survivor, per dimension, in projected dimensions (a gather)
PROBES = 32  # sample rows searched for among the sample


def projected(centred: Any, basis: Any) -> Any:
    """y = (P·x, ‖x − PᵀP·x‖) of each centred row (by row)."""
    import numpy as np

    head = centred @ basis
    rest_sq = np.einsum("ij,ij->i", centred, centred) - np.einsum("ij,ij->i", head, head)
    return np.hstack([head, np.sqrt(np.maximum(rest_sq, 0.0))[:, None]])


def choose_basis(centred: Any, limit: float) -> Any:
    """The principal directions (dim, m) that make the cheapest pass over these centred
    sample rows at ``limit`` (= 2 − 2τ + margin), or None when the sign codes are cheaper."""
    import numpy as np

    rows = np.asarray(centred, dtype=np.float64)
    if len(rows) < 4 * PROBES:  # too few to measure (and a small index scans anyway)
        return None
    dim, half = rows.shape[1], len(rows) // 2
    fit, sample = rows[half:], rows[:half]  # measured on rows the directions were not fit to
    _, directions = np.linalg.eigh(fit.T @ fit)  # ascending; cheaper than an SVD
    directions = directions[:, ::-1]
    half_sq = 0.5 * np.einsum("ij,ij->i", sample, sample)
    probes = min(PROBES, len(sample))
    floor = half_sq[:probes] - 0.5 * limit
    best, best_cost = None, float(SIGNS_COST)
    for width in WIDTHS:
        if width >= dim:
            break
        y = projected(sample, directions[:, :width])
        bound = y[:probes] @ y.T - half_sq[None, :]
        share = float(np.mean(bound >= floor[:, None]))
        cost = width + SCORE_COST * share * dim
        if cost < best_cost:
            best, best_cost = width, cost
    if best is None:
        return None
    return np.ascontiguousarray(directions[:, :best], dtype=np.float32)

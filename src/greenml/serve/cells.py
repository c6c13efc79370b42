"""Cells of an exact index: k-means centres whose triangle-inequality bounds rule out rows.

For a unit query q and a row x of cell k (centre c_k, r_x = ‖x − c_k‖, and
R_k ≥ every r_x of the cell):

    ‖q − x‖ ≥ |‖q − c_k‖ − r_x| ≥ ‖q − c_k‖ − R_k,

and for unit vectors q·x ≥ τ ⇔ ‖q − x‖ ≤ √(2 − 2τ). A cell whose bound exceeds
that radius holds no match, and neither does a row whose own bound does: only
the rows left are scored exactly. One small matvec over the centres replaces a
pass over every row, which pays on embeddings grouped by topic, with or without
a common direction (where sign codes see nothing).

The centres only steer the speed, never the answer: any centre gives a valid
bound. Rows added later go to their nearest cell (its R_k grows to cover
them); removed rows drop out (R_k stays an upper bound); the cells are
recomputed when the rows doubled or halved, or turned over. Rows are listed by cell, then by
r_x, so that the rows a cell keeps are one range, found by binary search
(rows are unit vectors and centres lie in the ball, so r_x ≤ 2: the key
4·cell + r_x sorts both at once); those written since the listing are kept apart
and bounded one by one.

What the cells keep is sharpened by a second bound per row: with P the top
``HEAD`` principal directions of the rows and ρ_v = ‖(I − PᵀP)(v − c_k)‖ (the
rest of v − c_k's length), ‖q − x‖² ≥ ‖Pq − Px‖² + (ρ_q − ρ_x)² (the
projections' distance, and the reverse triangle inequality on the rest).
``HEAD`` floats and ρ_x a row (float32), read only for the cells' candidates.
"""

from __future__ import annotations

from typing import Any

from greenml.serve.bound_kernels import dot

ROWS_PER_CELL = 48  # cells = rows / this, as a power of two
SAMPLE_PER_CELL = 8  # k-means runs on this many sampled rows per cell
ITERATIONS = 8  # Lloyd steps; the first RESEEDS move the smallest cells
RESEEDS = 6  # ... onto the rows farthest from their centres (topics left without a cell)
RHO_MARGIN = 2e-3  # > float32 error of ρ = √(r² − ‖P(x − c)‖²) (≤ √1e-6 near 0)
SQUARE_MARGIN = 2e-4  # > float32 error of ‖q − c‖² = 1 + ‖c‖² − 2q·c (384 terms: < 1e-4)
HEAD = 32  # principal directions of the rows' second bound
SHARPEN_FROM = 32  # candidates from which that second bound is worth its pass
RELIST_SHARE = 1 / 32  # list the rows cell by cell again once this share was written since


def cell_count(rows: int) -> int:
    """Cells for ``rows`` rows: the largest power of two ≤ rows / ROWS_PER_CELL (at least 16)."""
    return 1 << max(4, (max(rows, 1) // ROWS_PER_CELL).bit_length() - 1)


class Cells:
    """k-means cells over an index's rows, with exact pruning bounds (see the module doc).

    Args:
        vecs: The index's (capacity, dim) float32 matrix of unit rows.
        live: Slots of the rows in use.
        seed: Seed of the sample and of the first centres.
    """

    def __init__(self, vecs: Any, live: Any, seed: int = 0) -> None:
        import numpy as np

        rng = np.random.default_rng(seed)
        self.built_for = len(live)
        count = cell_count(len(live))
        sample = vecs[live[rng.permutation(len(live))[: SAMPLE_PER_CELL * count]]]
        self.centres = _kmeans(sample, min(count, len(sample)), rng)
        self._sq = np.einsum("ij,ij->i", self.centres, self.centres)
        spread = (sample - sample.mean(axis=0)).astype(np.float64)
        directions = np.linalg.eigh(spread.T @ spread)[1][:, ::-1][:, :HEAD]  # top HEAD
        self._basis = np.ascontiguousarray(directions, dtype=np.float32)
        self._chead = self.centres @ self._basis  # P·c of each centre
        capacity = vecs.shape[0]
        self._head = np.zeros((capacity, self._basis.shape[1]), dtype=np.float32)  # P·x
        self._rho = np.zeros(capacity, dtype=np.float32)
        self._cell = np.zeros(capacity, dtype=np.int32)
        self._r = np.full(capacity, np.inf, dtype=np.float32)  # +inf: never a candidate
        self._radius = np.full(len(self.centres), -np.inf, dtype=np.float32)
        self._order: Any = np.zeros(0, dtype=np.intp)
        self._keys: Any = np.zeros(0, dtype=np.float64)  # 4·cell + r of each listed row
        self._pending: list[int] = []
        self.placed = 0  # rows written since the cells were built
        self.place(live, vecs[live])
        self._recentre(vecs, live)
        self.relist(live)
        self.placed = 0

    @property
    def nbytes(self) -> int:
        """Memory held: centres, per-row cell and distance, the listing."""
        arrays: list[Any] = [self.centres, self._sq, self._cell, self._r, self._radius]
        arrays += [self._order, self._basis, self._chead, self._head, self._rho]
        return int(sum(a.nbytes for a in arrays) + self._keys.nbytes + 8 * len(self._pending))

    def grow(self, capacity: int) -> None:
        """Room for ``capacity`` slots (the index grew)."""
        import numpy as np

        n = len(self._cell)
        cell = np.zeros(capacity, dtype=np.int32)
        r = np.full(capacity, np.inf, dtype=np.float32)
        head = np.zeros((capacity, self._head.shape[1]), dtype=np.float32)
        rho = np.zeros(capacity, dtype=np.float32)
        cell[:n], r[:n], head[:n], rho[:n] = self._cell, self._r, self._head, self._rho
        self._cell, self._r, self._head, self._rho = cell, r, head, rho

    def place(self, slots: Any, rows: Any) -> None:
        """Put unit ``rows`` (at ``slots``) in their nearest cells; widen those cells' radii."""
        for start in range(0, len(slots), 4096):
            chunk, block = slots[start : start + 4096], rows[start : start + 4096]
            self._cell[chunk] = _nearest(block, self.centres, self._sq)[0]
            self._measure(chunk, block)
        self._pending.extend(int(s) for s in slots)
        self.placed += len(slots)

    def _measure(self, slots: Any, rows: Any) -> None:
        """r, P·x and ρ of ``rows`` (at ``slots``, in their cells); widen the cells' radii."""
        import numpy as np

        cells = self._cell[slots]
        gaps = rows - self.centres[cells]
        square = np.einsum("ij,ij->i", gaps, gaps)
        self._r[slots] = np.sqrt(square)
        head = np.einsum("ij,jk->ik", rows, self._basis)  # no BLAS: one thread
        self._head[slots] = head
        off = head - self._chead[cells]
        self._rho[slots] = np.sqrt(np.maximum(square - np.einsum("ij,ij->i", off, off), 0.0))
        np.maximum.at(self._radius, cells, self._r[slots])

    def _recentre(self, vecs: Any, live: Any) -> None:
        """Move each centre to the mean of its rows (one more Lloyd half-step, on every row:
        the radii shrink) and measure the rows' distances again."""
        import numpy as np

        cells = self._cell[live]
        order = np.argsort(cells, kind="stable")
        used, firsts, sizes = np.unique(cells[order], return_index=True, return_counts=True)
        sums = np.add.reduceat(vecs[live[order]], firsts, axis=0, dtype=np.float64)
        self.centres[used] = (sums / sizes[:, None]).astype(np.float32)
        self._sq = np.einsum("ij,ij->i", self.centres, self.centres)
        self._chead = self.centres @ self._basis
        self._radius[:] = -np.inf
        for start in range(0, len(live), 4096):
            chunk = live[start : start + 4096]
            self._measure(chunk, vecs[chunk])

    def drop(self, slot: int) -> None:
        """Forget the row at ``slot`` (its cell's radius stays a valid upper bound)."""
        self._r[slot] = float("inf")

    def stale(self, rows: int) -> bool:
        """Whether the cells should be recomputed for ``rows`` live rows: doubled, halved, or
        as many rows written since they were built (a cache at its bound turns over)."""
        turned_over = self.placed >= self.built_for
        return turned_over or rows >= 2 * self.built_for or 2 * rows <= self.built_for

    def relist(self, live: Any) -> None:
        """List the live rows by cell, then distance to the centre (the written-since list
        starts empty)."""
        import numpy as np

        live = np.asarray(live, dtype=np.intp)
        keys = 4.0 * self._cell[live].astype(np.float64) + self._r[live]
        by_key = np.argsort(keys)
        self._order, self._keys = live[by_key], keys[by_key]
        self._pending = []

    def candidates(self, q: Any, threshold: float, most: int) -> Any:
        """Slots a unit ``q`` may match at cosine ≥ ``threshold`` (repeats possible);
        None when more than ``most`` rows pass the bound."""
        import numpy as np

        reach = float(np.sqrt(max(2.0 - 2.0 * threshold, 0.0) + 1e-4))
        square = 1.0 + self._sq - 2.0 * dot(self.centres, q)  # ‖q − c‖², give or take the margin
        near = np.sqrt(np.maximum(square - SQUARE_MARGIN, 0.0))  # ≤ ‖q − c‖
        far = np.sqrt(np.maximum(square + SQUARE_MARGIN, 0.0))  # ≥ ‖q − c‖
        kept = np.flatnonzero(near - self._radius <= reach)
        base = 4.0 * kept  # rows of a kept cell with near − reach ≤ r ≤ far + reach: one range
        lows = np.searchsorted(self._keys, base + np.maximum(near[kept] - reach, 0.0))
        highs = np.searchsorted(self._keys, base + np.minimum(far[kept] + reach, 3.0), "right")
        sizes = highs - lows
        total = int(sizes.sum())
        if total + len(self._pending) > most:
            return None
        offsets = np.repeat(lows - np.cumsum(sizes) + sizes, sizes) + np.arange(total)
        rows = self._order[offsets]
        if self._pending:
            pending = np.asarray(self._pending, dtype=np.intp)
            cells, r = self._cell[pending], self._r[pending]
            fresh = pending[(near[cells] - r <= reach) & (r - far[cells] <= reach)]
            rows = np.concatenate([rows, fresh])
        return self._sharpen(q, square, reach, rows) if len(rows) > SHARPEN_FROM else rows

    def _sharpen(self, q: Any, square: Any, reach: float, rows: Any) -> Any:
        """Those of ``rows`` that ‖Pq − Px‖² + (ρ_q − ρ_x)² ≤ reach² keeps (``square``: the
        ‖q − c‖² of every centre; every term widened for float32 rounding)."""
        import numpy as np

        qh = np.einsum("j,jk->k", q, self._basis)
        off = qh - self._chead
        rest = square - np.einsum("ij,ij->i", off, off)  # ρ_q² of each centre, ± the margin
        low = np.sqrt(np.maximum(rest - 2 * SQUARE_MARGIN, 0.0)) - RHO_MARGIN
        high = np.sqrt(np.maximum(rest + 2 * SQUARE_MARGIN, 0.0)) + RHO_MARGIN
        cells, rho = self._cell[rows], self._rho[rows]
        gap = np.maximum(np.maximum(low[cells] - rho, rho - high[cells]), 0.0)
        diff = self._head[rows] - qh
        bound = np.einsum("ij,ij->i", diff, diff) + gap * gap
        return rows[bound <= reach * reach + SQUARE_MARGIN]

    def pending(self) -> int:
        """Rows written since the last listing."""
        return len(self._pending)


def _nearest(rows: Any, centres: Any, sq: Any = None) -> Any:
    """Index of the nearest centre of each row, and that squared distance less ‖row‖²
    (``sq``: the centres' squared norms, if known)."""
    import numpy as np

    if sq is None:
        sq = np.einsum("ij,ij->i", centres, centres)
    if len(rows) == 1:  # one thread: a BLAS call for one row can stall on a busy machine
        scores = (sq - 2.0 * dot(centres, rows[0]))[None, :]
    else:
        scores = sq[None, :] - 2.0 * (rows @ centres.T)
    nearest = scores.argmin(axis=1)
    return nearest, scores[np.arange(len(rows)), nearest]


def _kmeans(sample: Any, count: int, rng: Any) -> Any:
    """``count`` centres of ``sample`` rows: Lloyd steps from random rows; the first steps
    move the smallest cells onto the rows farthest from their centres."""
    import numpy as np

    centres = sample[rng.permutation(len(sample))[:count]].astype(np.float32)
    for step in range(ITERATIONS):
        nearest, far = _nearest(sample, centres)
        order = np.argsort(nearest, kind="stable")
        used, firsts, sizes = np.unique(nearest[order], return_index=True, return_counts=True)
        centres[used] = np.add.reduceat(sample[order], firsts, axis=0) / sizes[:, None]
        if step < RESEEDS:
            counts = np.zeros(count, dtype=np.intp)
            counts[used] = sizes
            smallest = np.argsort(counts, kind="stable")[: max(1, count // 20)]
            centres[smallest] = sample[np.argsort(far)[-len(smallest) :]]
    out: Any = np.ascontiguousarray(centres, dtype=np.float32)
    return out

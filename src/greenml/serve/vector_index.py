"""Nearest cached prompt by cosine similarity: exact with NumPy, or approximate with FAISS.

:class:`ExactIndex` keeps normalized float32 rows in a preallocated matrix and
returns the same answer as one matmul and an argmax over every row. To stay
fast at 100k rows, whose matrix (150 MB at 384 dimensions) takes far longer
to read than a lookup may last, it first discards the rows that *provably*
cannot reach the threshold (for unit vectors, q·x ≥ τ ⇒ ‖q − x‖² ≤ 2 − 2τ),
then scores the rest. Three bounds, each chosen from the index's own rows:

- k-means cells (:mod:`greenml.serve.cells`): ‖q − x‖ ≥ |‖q − c‖ − ‖x − c‖|
  for the centre c of x's cell rules out whole cells, then rows, after one small
  matvec over the centres. Built from 8,192 rows, again whenever the rows doubled
  or halved, and kept when it prunes searches for the index's own rows.
- Otherwise, or when the cells keep too many rows (a low threshold), one pass
  over every row, with a bound on the *centred* vectors x − c, q − c (a
  translation keeps ‖q − x‖; c is the rows' mean, recomputed when it drifted):
  the projection bound (:mod:`greenml.serve.projection`: m principal directions
  and the rest's norm, Cauchy–Schwarz) when it is measured the cheaper, else
  1-bit sign codes: where the signs of q_i and x_i differ (h places),
  ‖q − x‖² ≥ (ℓq(h) + ℓx(h))² / h, ℓ_v(h) the sum of the h smallest |v_i|
  (ℓx(h) ≥ a_x + b_x·h, a tangent: two floats per row), tested again in a
  second, randomly rotated basis.

Every bound has a margin for float32 rounding and never discards a row at or
above the threshold, so the result is exact; only its speed depends on the data.
When a pass does not pay (most queries end in a full scan), the index goes
straight to the matmul, and every ``PROBE_EVERY`` queries tries the bound on
``PROBE_ROWS`` rows. ``mode``, ``cells``, ``cell_searches``, ``pruned_searches``
and ``scanned_searches`` say what it did; ``nbytes`` what it holds.

:class:`greenml.serve.faiss_index.FaissIndex` (HNSW, approximate) is the
option beyond ~100k entries.

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from greenml.errors import ConfigError
from greenml.serve.bound_kernels import dot as _dot
from greenml.serve.bound_kernels import popcount as _popcount
from greenml.serve.bound_kernels import smallest_sums as _smallest_sums
from greenml.serve.cells import RELIST_SHARE, Cells
from greenml.serve.projection import choose_basis, projected

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

ROUNDING_MARGIN = 1e-4  # ≫ float32 error of unit-vector sums, ≪ any useful threshold gap
FULL_SCAN_SHARE = 1 / 16  # score every row when more survive the bound
SMALL = 2048  # below this many rows a plain matmul is as fast
RECENTRE_DRIFT = 0.05  # recompute the codes when the mean moved this far from their centre
PROBE_EVERY = 16  # while scanning, probe the bound this often ...
PROBE_ROWS = 4096  # ... on this many rows
CELLS_FROM = 8192  # rows from which k-means cells are tried (greenml.serve.cells)
CELLS_SHARE = 1 / 2  # the cells' bound is used when its cells hold at most this share ...
CELLS_KEEP = 1 / 16  # ... and kept while the probes' candidates average under this share
CELLS_PROBES = 32  # rows searched for, to measure that share when the cells are (re)built
PROBE_THRESHOLD = 0.95  # ... at the semantic cache's default threshold


class VectorIndex(Protocol):
    """What the semantic cache needs from an index."""

    exact: bool
    dim: int

    def __len__(self) -> int: ...

    def add(self, key: str, vector: Vectors) -> None:
        """Insert or replace ``key``."""
        ...

    def add_many(self, keys: Sequence[str], vectors: Any) -> None:
        """Insert or replace several keys at once."""
        ...

    def remove(self, key: str) -> bool:
        """Forget ``key``; False if absent."""
        ...

    def search(self, query: Vectors, threshold: float) -> tuple[str, float] | None:
        """The most similar key with cosine ≥ threshold, and its cosine."""
        ...


def check_threshold(threshold: float) -> float:
    """``threshold`` if it lies in (0, 1]; ConfigError otherwise."""
    if not (0.0 < threshold <= 1.0):
        raise ConfigError(f"the similarity threshold must be in (0, 1], got {threshold}")
    return threshold


def normalized(vector: Any, dim: int) -> Vectors:
    """A float32 unit vector; ConfigError for a wrong size, NaN or a zero vector."""
    import numpy as np

    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    if v.shape[0] != dim:
        raise ConfigError(f"expected a vector of {dim} dimensions, got {v.shape[0]}")
    norm = float(np.linalg.norm(v))
    if not math.isfinite(norm) or norm == 0.0:
        raise ConfigError("cannot index a zero or non-finite vector")
    out: Vectors = v / np.float32(norm)
    return out


class ExactIndex:
    """Exact cosine search over a growing, preallocated float32 matrix (see the module doc).

    Args:
        dim: Vector size.
        capacity: Rows allocated up front; doubled when full.
        seed: Seed of the second basis' random rotation and of the cells' k-means.
        cells_from: Rows from which k-means cells are tried.
    """

    exact = True

    def __init__(
        self, dim: int, capacity: int = 1024, *, seed: int = 0, cells_from: int = CELLS_FROM
    ) -> None:
        import numpy as np

        if dim < 1 or capacity < 1:
            raise ConfigError("an index needs dim >= 1 and capacity >= 1")
        self.dim = dim
        self._words = (dim + 63) // 64
        self._h0 = max(1, round(0.4 * dim))  # about where random rows leave the bound
        q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((dim, dim)))
        self._rotation = (q * np.sign(np.diag(r))).astype(np.float32)  # Haar-distributed
        self._centre = np.zeros(dim, dtype=np.float32)  # the codes are of x - centre
        self._sum = np.zeros(dim, dtype=np.float64)  # of the live rows
        self._changes = 0  # rows added or removed since the codes were last centred
        self._scan_share = 0.0  # recent share of pruned searches that ended in a full scan
        self._since_probe = 0
        self.recentres = 0  # times every code was recomputed around a new mean
        self.pruned_searches = 0  # searches that scored only the bound's survivors
        self.scanned_searches = 0  # searches that scored every row (pruning did not pay)
        self._keys: list[str | None] = []
        self._slots: dict[str, int] = {}
        self._free: list[int] = []
        self._cap = 0
        self._vecs: Any = None
        self._codes: Any = None
        self._codes2: Any = None
        self._ab: Any = None
        self._ab2: Any = None
        self._basis: Any = None  # (dim, m) principal directions, when projecting
        self._y: Any = None  # per row (by column): its projection and the norm of the rest
        self._half_sq: Any = None  # per row: ‖x − centre‖² / 2 (+inf for a free row)
        self.mode = "signs"  # the bound in use: "signs" or "projection"
        self.cells: Cells | None = None  # k-means cells, tried first when they prune
        self._cells_tried_at = 0  # rows when cells were last built (kept or not)
        self.cell_searches = 0  # searches that scored only the cells' candidates
        self._seed, self._cells_from = seed, max(cells_from, SMALL + 1)
        self._grow(capacity)

    def __len__(self) -> int:
        return len(self._slots)

    @property
    def centre(self) -> Vectors:
        """The point the bounds' codes are taken around (the rows' mean, give or take a drift)."""
        out: Vectors = self._centre.copy()
        return out

    @property
    def nbytes(self) -> int:
        """Bytes held in arrays: rows, codes, projections, cells and scratch (not the keys)."""
        import numpy as np

        arrays = sum(v.nbytes for v in vars(self).values() if isinstance(v, np.ndarray))
        return int(arrays) + (self.cells.nbytes if self.cells is not None else 0)

    def _grow(self, capacity: int) -> None:
        import numpy as np

        n, words = len(self._keys), self._words
        empty = np.array([[np.inf], [0.0]], dtype=np.float32)  # a = +inf: never a candidate
        vecs = np.zeros((capacity, self.dim), dtype=np.float32)
        codes = np.zeros((words, capacity), dtype=np.uint64)  # basis 1, by column
        codes2 = np.zeros((capacity, words), dtype=np.uint64)  # basis 2, by row
        ab, ab2 = np.tile(empty, (1, capacity)), np.tile(empty, (1, capacity))
        width = 0 if self._basis is None else self._basis.shape[1]
        y = np.zeros((width + 1, capacity), dtype=np.float32)  # by column, like codes
        half_sq = np.full(capacity, np.inf, dtype=np.float32)
        if self._cap:
            vecs[:n], codes[:, :n] = self._vecs[:n], self._codes[:, :n]
            codes2[:n] = self._codes2[:n]
            ab[:, :n], ab2[:, :n] = self._ab[:, :n], self._ab2[:, :n]
            y[:, :n], half_sq[:n] = self._y[:, :n], self._half_sq[:n]
        self._y, self._half_sq = y, half_sq
        self._vecs, self._codes, self._codes2, self._ab, self._ab2 = vecs, codes, codes2, ab, ab2
        self._h = np.zeros(capacity, dtype=np.uint16)
        self._cnt = np.zeros(capacity, dtype=np.uint8)
        self._tmp = np.zeros(capacity, dtype=np.uint64)
        self._bound = np.zeros(capacity, dtype=np.float32)
        self._looked_up = np.zeros(capacity, dtype=np.float32)
        self._keep = np.zeros(capacity, dtype=bool)
        self._cap = capacity
        if self.cells is not None:
            self.cells.grow(capacity)

    def _code(self, v: Vectors) -> Any:
        """The sign bits of ``v`` (1 where v_i ≥ 0), padded with zeros, as uint64 words."""
        import numpy as np

        bits = np.zeros(self._words * 64, dtype=bool)
        bits[: self.dim] = v >= 0
        return np.packbits(bits).view(np.uint64)

    def add(self, key: str, vector: Any) -> None:
        """Insert or replace ``key`` with ``vector`` (normalized here)."""
        self.add_many([key], normalized(vector, self.dim).reshape(1, -1))

    def add_many(self, keys: Sequence[str], vectors: Any) -> None:
        """Insert or replace several keys (one vectorized pass over their rows)."""
        import numpy as np

        rows = np.asarray(vectors, dtype=np.float32).reshape(len(keys), -1)
        if rows.shape[1] != self.dim:
            raise ConfigError(f"expected vectors of {self.dim} dimensions, got {rows.shape[1]}")
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        if not (np.isfinite(norms).all() and (norms > 0).all()):
            raise ConfigError("cannot index a zero or non-finite vector")
        rows = rows / norms
        replaced = sorted({self._slots[key] for key in keys if key in self._slots})
        if replaced:
            self._sum -= self._vecs[replaced].sum(axis=0, dtype=np.float64)
        slots = np.array([self._slot(key) for key in keys], dtype=np.intp)
        self._vecs[slots] = rows
        self._sum += self._vecs[np.unique(slots)].sum(axis=0, dtype=np.float64)
        self._encode(slots, rows)
        if self.cells is not None:
            written = np.unique(slots)
            self.cells.place(written, self._vecs[written])
        self._changes += len(slots)
        self._maybe_recentre()
        self._maybe_partition()

    def _encode(self, slots: Any, rows: Vectors) -> None:
        """Codes and tangents of ``rows`` (unit vectors) centred on the current centre."""
        import numpy as np

        centred = rows - self._centre
        if len(rows) > 1:
            rotated = centred @ self._rotation.T
        else:
            rotated = _dot(self._rotation, centred[0])[None]
        self._codes[:, slots] = self._codes_of(centred).T
        self._codes2[slots] = self._codes_of(np.ascontiguousarray(rotated))
        self._ab[:, slots] = self._tangents(centred)
        self._ab2[:, slots] = self._tangents(rotated)
        self._half_sq[slots] = 0.5 * np.einsum("ij,ij->i", centred, centred)
        if self._basis is not None:
            self._y[:, slots] = projected(centred, self._basis).T

    def _maybe_recentre(self) -> None:
        """Recompute every code around the rows' mean once it drifted (amortized)."""
        import numpy as np

        n = len(self._slots)
        if n == 0 or 4 * self._changes < n:
            return
        self._changes = 0
        mean = (self._sum / n).astype(np.float32)
        if float(np.linalg.norm(mean - self._centre)) <= RECENTRE_DRIFT:
            return
        self._centre = mean
        self._scan_share = 0.0
        self.recentres += 1
        live = np.fromiter(self._slots.values(), dtype=np.intp, count=n)
        self._choose_bound(live)
        for start in range(0, n, 8192):
            chunk = live[start : start + 8192]
            self._encode(chunk, self._vecs[chunk])

    def _maybe_partition(self) -> None:
        """(Re)build the k-means cells when the rows doubled or halved; keep them if they
        prune the probes' searches (measured on this index's own rows), else drop them."""
        import numpy as np

        n = len(self._slots)
        if n < self._cells_from:
            self.cells, self._cells_tried_at = None, 0
            return
        cells, tried = self.cells, self._cells_tried_at
        if cells is not None and not cells.stale(n):
            if cells.pending() > max(256, n * RELIST_SHARE):
                cells.relist(np.fromiter(self._slots.values(), dtype=np.intp, count=n))
            return
        if cells is None and tried // 2 < n < 2 * tried:
            return
        self._cells_tried_at = n
        live = np.fromiter(self._slots.values(), dtype=np.intp, count=n)
        self._choose_bound(live)  # the fallback's bound, measured again at this size
        for start in range(0, n if self._basis is not None else 0, 8192):
            chunk = live[start : start + 8192]
            self._y[:, chunk] = projected(self._vecs[chunk] - self._centre, self._basis).T
        cells = Cells(self._vecs, live, self._seed)
        most = int(n * CELLS_SHARE)
        probes = live[np.random.default_rng(n).permutation(n)[:CELLS_PROBES]]
        found = [cells.candidates(self._vecs[s], PROBE_THRESHOLD, most) for s in probes]
        kept = [len(f) for f in found if f is not None]
        pruned = 4 * len(kept) >= 3 * len(found) and sum(kept) <= n * CELLS_KEEP * len(kept)
        self.cells = cells if pruned else None

    def _choose_bound(self, live: Any) -> None:
        """Project on the principal directions when that pass is the cheaper (measured on a
        sample, greenml.serve.projection), else keep the sign codes."""
        import numpy as np

        sample = live[np.random.default_rng(len(live)).permutation(len(live))[:4096]]
        limit = 2.0 - 2.0 * PROBE_THRESHOLD + ROUNDING_MARGIN
        self._basis = choose_basis(self._vecs[sample] - self._centre, limit)
        self.mode = "signs" if self._basis is None else "projection"
        width = 0 if self._basis is None else self._basis.shape[1]
        self._y = np.zeros((width + 1, self._cap), dtype=np.float32)

    def _slot(self, key: str) -> int:
        slot = self._slots.get(key)
        if slot is not None:
            return slot
        if self._free:
            slot = self._free.pop()
        else:
            slot = len(self._keys)
            if slot == self._cap:
                self._grow(2 * self._cap)
            self._keys.append(None)
        self._slots[key] = slot
        self._keys[slot] = key
        return slot

    def _codes_of(self, rows: Vectors) -> Any:
        """Sign bits of each row (1 where ≥ 0), zero-padded, as uint64 words per row."""
        import numpy as np

        bits = np.zeros((rows.shape[0], self._words * 64), dtype=bool)
        bits[:, : self.dim] = rows >= 0
        return np.packbits(bits, axis=1).view(np.uint64)

    def _tangents(self, rows: Vectors) -> Any:
        """(a, b) per row: a + b·h ≤ the sum of the h smallest |x_i| for every h (convexity)."""
        import numpy as np

        h0 = self._h0
        sizes = np.partition(np.abs(rows), h0 - 1, axis=1)  # the h0 smallest first
        slope = sizes[:, h0 - 1].astype(np.float64)
        return np.stack([sizes[:, :h0].sum(axis=1, dtype=np.float64) - h0 * slope, slope])

    def remove(self, key: str) -> bool:
        """Forget ``key``; its row is zeroed and reused."""
        import numpy as np

        slot = self._slots.pop(key, None)
        if slot is None:
            return False
        self._keys[slot] = None
        self._sum -= self._vecs[slot]
        self._vecs[slot] = 0.0
        self._ab[0, slot] = self._ab2[0, slot] = self._half_sq[slot] = np.inf
        self._free.append(slot)
        if self.cells is not None:
            self.cells.drop(slot)
        self._changes += 1
        self._maybe_recentre()
        self._maybe_partition()
        return True

    def search(self, query: Any, threshold: float) -> tuple[str, float] | None:
        """The most similar key with cosine ≥ ``threshold`` (exact), and that cosine."""

        check_threshold(threshold)
        n = len(self._keys)
        if not self._slots:
            return None
        q = normalized(query, self.dim)
        if n <= SMALL:
            return self._scan(q, threshold, n)
        if self.cells is not None:
            rows = self.cells.candidates(q, threshold, int(n * CELLS_SHARE))
            if rows is not None and rows.size <= n * CELLS_SHARE / 2:  # else a scan is cheaper
                self.cell_searches += 1
                return self._best(rows, _dot(self._vecs[rows], q), threshold) if rows.size else None
            if rows is not None:
                return self._scan(q, threshold, n)
        limit = 2.0 - 2.0 * threshold + ROUNDING_MARGIN
        qc = q - self._centre
        if self._scan_share > 0.5:  # pruning has not paid lately: scan, and now and then
            self._since_probe += 1  # probe the bound on the first rows only (cheap)
            if self._since_probe >= PROBE_EVERY:
                self._since_probe = 0
                rows = min(n, PROBE_ROWS)
                if self._prefilter(qc, limit, rows).size <= rows * FULL_SCAN_SHARE:
                    self._scan_share = 0.5  # the next search tries the bound again
            return self._scan(q, threshold, n)
        candidates = self._prefilter(qc, limit, n)
        if self._note_scan(candidates.size > n * FULL_SCAN_SHARE):
            return self._scan(q, threshold, n)
        self.pruned_searches += 1
        if candidates.size and self._basis is None:
            candidates = self._second_pass(qc, limit, candidates)
        if candidates.size == 0:
            return None
        return self._best(candidates, _dot(self._vecs[candidates], q), threshold)

    def _prefilter(self, q: Vectors, limit: float, n: int) -> Any:
        """Of the first ``n`` rows, those the bound in use does not rule out (q centred)."""
        if self._basis is not None:
            return self._projection_pass(q, limit, n)
        return self._first_pass(q, limit, n)

    def _note_scan(self, scanned: bool) -> bool:
        """Fold one outcome into the recent share of scans (over ~8 searches); ``scanned``."""
        self._scan_share += (float(scanned) - self._scan_share) / 8
        return scanned

    def _scan(self, q: Vectors, threshold: float, n: int) -> tuple[str, float] | None:
        """Score every row: one matmul (small indexes, or when the bound would not prune)."""
        import numpy as np

        if n > SMALL:
            self.scanned_searches += 1
        return self._best(np.arange(n), _dot(self._vecs[:n], q), threshold)

    def _projection_pass(self, q: Vectors, limit: float, n: int) -> Any:
        """Rows whose ‖q − x‖² ≥ ‖q‖² + ‖x‖² − 2·y_q·y_x does not exceed ``limit`` (q centred)."""
        import numpy as np

        yq = projected(q[None], self._basis)[0]
        bound = self._bound[:n]
        np.einsum("j,ji->i", yq, self._y[:, :n], out=bound)  # one thread, by column: fastest
        bound -= self._half_sq[:n]
        floor = 0.5 * (float(np.dot(q, q)) - limit)
        return np.flatnonzero(np.greater_equal(bound, floor, out=self._keep[:n]))

    def _first_pass(self, q: Vectors, limit: float, n: int) -> Any:
        """Rows the sign bound in the first basis does not rule out (q centred; every row)."""
        import numpy as np

        words = self._code(q)
        h, cnt, tmp, bound = self._h[:n], self._cnt[:n], self._tmp[:n], self._bound[:n]
        for w in range(self._words):
            np.bitwise_xor(self._codes[w, :n], words[w], out=tmp)
            _popcount(tmp, cnt)
            if w == 0:
                np.copyto(h, cnt)
            else:
                np.add(h, cnt, out=h)
        sums, inverse = _smallest_sums(q)
        looked_up, keep = self._looked_up[:n], self._keep[:n]  # no 100k-row temporaries
        np.multiply(self._ab[1, :n], h, out=bound)
        bound += self._ab[0, :n]
        bound += np.take(sums, h, out=looked_up)
        np.maximum(bound, 0.0, out=bound)
        np.square(bound, out=bound)
        bound *= np.take(inverse, h, out=looked_up)
        return np.flatnonzero(np.less_equal(bound, limit, out=keep))

    def _second_pass(self, q: Vectors, limit: float, rows: Any) -> Any:
        """Of ``rows``, those the bound in the rotated basis does not rule out."""
        import numpy as np

        q2 = _dot(self._rotation, q)  # q is centred, so q2 is too (rotation is linear)
        diff = self._codes2[rows] ^ self._code(q2)
        counts = np.zeros(diff.shape, dtype=np.uint8)
        _popcount(diff, counts)
        h = counts.sum(axis=1, dtype=np.intp)
        sums, inverse = _smallest_sums(q2)
        bound = np.maximum(sums[h] + self._ab2[0, rows] + self._ab2[1, rows] * h, 0.0)
        return rows[bound * bound * inverse[h] <= limit]

    def _best(self, rows: Any, scores: Any, threshold: float) -> tuple[str, float] | None:
        """The best of ``rows``, if its float32 score ≥ the threshold in float32, as a
        matmul's ``scores >= threshold`` decides (NumPy 2); the bounds' margins allow for it."""
        import numpy as np

        if scores.size == 0:
            return None
        j = int(scores.argmax())
        key = self._keys[int(rows[j])]
        if key is None or not np.float32(scores[j]) >= np.float32(threshold):
            return None
        return key, min(float(scores[j]), 1.0)

"""k-means cells never rule out a match, and ExactIndex with cells answers as brute force does."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from greenml.serve.cells import Cells, cell_count
from greenml.serve.vector_index import ExactIndex

DIM = 384
KINDS = ("isotropic", "clustered", "anisotropic-clustered")


def unit(rows: np.ndarray) -> np.ndarray:
    out: np.ndarray = (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)
    return out


def distribution(kind: str, n: int, rng: np.random.Generator, topics: int = 40) -> np.ndarray:
    """isotropic; clustered (topics, within-topic cosine ≈ 0.5); anisotropic-clustered
    (a common direction and topics: mean pairwise cosine ≈ 0.6, like embedding APIs)."""
    if kind == "isotropic":
        return unit(rng.standard_normal((n, DIM)))
    if kind == "clustered":
        centres = rng.standard_normal((topics, DIM))
        return unit(centres[rng.integers(0, topics, n)] + rng.standard_normal((n, DIM)))
    mean = unit(rng.standard_normal(DIM))
    chosen = unit(rng.standard_normal((topics, DIM)))[rng.integers(0, topics, n)]
    return unit(mean + 0.6 * chosen + 0.5 * rng.standard_normal((n, DIM)) / np.sqrt(DIM))


def at_cosine(x: np.ndarray, cosine: float, rng: np.random.Generator) -> np.ndarray:
    """A unit vector at this cosine from unit vector x (to float32 rounding)."""
    r = rng.standard_normal(x.shape[0])
    r -= (r @ x) * x
    out = cosine * x.astype(np.float64) + np.sqrt(max(1 - cosine**2, 0.0)) * r / np.linalg.norm(r)
    return unit(out)


def queries(data: np.ndarray, threshold: float, rng: np.random.Generator) -> list[np.ndarray]:
    """Rows themselves, vectors right at, just above and just below the threshold from a
    row, near duplicates, and fresh directions."""
    picks = rng.integers(len(data), size=6)
    out = [data[i] for i in picks[:2]]
    out += [at_cosine(data[i], threshold + d, rng) for i in picks for d in (0.0, 1e-4, -1e-4)]
    out += [at_cosine(data[i], 0.97, rng) for i in picks[:2]]
    return out + list(unit(rng.standard_normal((2, DIM))))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(KINDS),
    n=st.integers(min_value=1, max_value=1200),
    threshold=st.floats(min_value=0.5, max_value=0.999),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_cells_keep_every_row_at_or_above_the_threshold(
    kind: str, n: int, threshold: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    data = distribution(kind, n, rng)
    cells = Cells(data, np.arange(n), seed=seed % 7)
    for q in queries(data, threshold, rng):
        kept = cells.candidates(q, threshold, most=n)
        assert kept is not None
        must = np.flatnonzero(data.astype(np.float64) @ q.astype(np.float64) >= threshold - 1e-6)
        assert set(must.tolist()) <= set(kept.tolist())


def brute(rows: np.ndarray, q: np.ndarray, threshold: float) -> tuple[int, float] | None:
    scores = np.vecdot(rows, q / np.linalg.norm(q))
    j = int(scores.argmax())
    return (j, float(scores[j])) if scores[j] >= threshold else None


def check(index: ExactIndex, rows: dict[str, np.ndarray], qs: list[np.ndarray], tau: float) -> None:
    keys = list(rows)
    assert all(np.allclose(index._vecs[index._slots[k]], rows[k], atol=1e-6) for k in keys)
    # brute force over the rows as stored (normalized again: an ulp apart, which matters
    # for vectors right at the threshold)
    matrix = np.array([index._vecs[index._slots[k]] for k in keys])
    for q in qs:
        expected, got = brute(matrix, q, tau), index.search(q, tau)
        if expected is None:
            assert got is None
        else:
            assert got is not None and got[0] == keys[expected[0]]
            assert got[1] == pytest.approx(expected[1], abs=1e-6)


@pytest.mark.parametrize("kind", ("clustered", "anisotropic-clustered"))
def test_cells_are_kept_and_exact_through_removals_replacements_and_growth(kind: str) -> None:
    rng = np.random.default_rng(21)
    data = distribution(kind, 12000, rng, topics=40)
    base, extra = data[:8000], data[8000:]
    index = ExactIndex(DIM, capacity=128, cells_from=3000)
    rows = {f"k{i}": base[i] for i in range(8000)}
    index.add_many(list(rows), base)
    assert index.cells is not None  # measured on its own rows: they prune
    for tau in (0.95, 0.9, 0.99):
        check(index, rows, queries(base, tau, rng), tau)
    searched = index.cell_searches
    assert searched > 0
    for i in rng.choice(8000, 2500, replace=False):  # removals: their rows must drop out
        assert index.remove(f"k{i}")
        del rows[f"k{i}"]
    for j, key in enumerate(rng.choice(list(rows), 200, replace=False)):  # new vectors
        rows[str(key)] = extra[j]
        index.add(str(key), extra[j])
    for j in range(200, 4000):  # one at a time, as a cache fills (listed again on the way)
        rows[f"new{j}"] = extra[j]
        index.add(f"new{j}", extra[j])
    assert len(index) == len(rows) and index.cells is not None
    live = np.array(list(rows.values()))
    for tau in (0.95, 0.9, 0.99):
        check(index, rows, queries(live, tau, rng), tau)
    assert index.cell_searches > searched


def test_isotropic_rows_drop_the_cells_they_cannot_prune() -> None:
    data = distribution("isotropic", 6000, np.random.default_rng(22))
    index = ExactIndex(DIM, cells_from=3000)
    index.add_many([f"k{i}" for i in range(len(data))], data)
    assert index.cells is None  # no topics: every cell is as wide as the sphere
    rows = {f"k{i}": data[i] for i in range(len(data))}
    check(index, rows, queries(data, 0.95, np.random.default_rng(23)), 0.95)
    assert index.cell_searches == 0


def test_memory_counts_rows_codes_and_cells() -> None:
    data = distribution("clustered", 4000, np.random.default_rng(24))
    index = ExactIndex(DIM, capacity=4096, cells_from=3000)
    index.add_many([f"k{i}" for i in range(len(data))], data)
    assert index.cells is not None
    rows_only = 4096 * DIM * 4
    assert rows_only + index.cells.nbytes < index.nbytes < 2 * rows_only


def test_cell_count() -> None:
    assert [cell_count(n) for n in (0, 100, 48 * 64, 100_000)] == [16, 16, 64, 2048]


def test_a_few_rows_keep_the_sign_codes_without_measuring() -> None:
    from greenml.serve.projection import choose_basis

    rows = distribution("anisotropic-clustered", 40, np.random.default_rng(25))
    assert choose_basis(rows - rows.mean(axis=0), 0.1) is None
    many = distribution("anisotropic-clustered", 2000, np.random.default_rng(26))
    basis = choose_basis(many - many.mean(axis=0), 0.1)
    assert basis is not None and basis.shape[0] == DIM
    assert np.allclose(basis.T @ basis, np.eye(basis.shape[1]), atol=1e-5)  # orthonormal


def test_cells_go_stale_when_the_rows_double_halve_or_turn_over() -> None:
    data = distribution("clustered", 2000, np.random.default_rng(27))
    cells = Cells(data, np.arange(1000))
    assert not cells.stale(1000) and cells.stale(2000) and cells.stale(500)
    cells.place(np.arange(1000, 1999), data[1000:1999])  # written over, one short of all
    assert not cells.stale(1000)
    cells.place(np.arange(1999, 2000), data[1999:])
    assert cells.stale(1000)

"""ExactIndex equals brute force (its pruning bound is never wrong); FaissIndex finds neighbours."""

from __future__ import annotations

import numpy as np
import pytest

from greenml.errors import ConfigError
from greenml.serve.faiss_index import FaissIndex
from greenml.serve.indexes import make_index
from greenml.serve.vector_index import SMALL, ExactIndex

DIM = 384


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


def at_cosine(x: np.ndarray, cosine: float, rng: np.random.Generator) -> np.ndarray:
    """A unit vector at exactly this cosine from unit vector x."""
    r = rng.standard_normal(x.shape[0])
    r -= (r @ x) * x
    r /= np.linalg.norm(r)
    return (cosine * x + np.sqrt(1 - cosine**2) * r).astype(np.float32)


def brute(rows: np.ndarray, q: np.ndarray, threshold: float) -> tuple[int, float] | None:
    scores = np.vecdot(rows, q / np.linalg.norm(q))
    j = int(scores.argmax())
    return (j, float(scores[j])) if scores[j] >= threshold else None


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    rng = np.random.default_rng(3)
    isotropic = rng.standard_normal((3000, DIM))
    # clustered rows (topics) and sparse-ish rows: hard cases for a sign-code bound
    centers = rng.standard_normal((20, DIM))
    clustered = centers[rng.integers(0, 20, 1500)] + 0.6 * rng.standard_normal((1500, DIM))
    sparse = rng.standard_normal((500, DIM)) * (rng.random((500, DIM)) < 0.05) + 1e-3
    return unit(np.vstack([isotropic, clustered, sparse]))


def test_exact_search_matches_brute_force(data: np.ndarray) -> None:
    assert len(data) > SMALL  # the pruned path, not the small-index matmul
    index = ExactIndex(DIM, capacity=64)  # grows by doubling on the way
    index.add_many([f"k{i}" for i in range(len(data))], data)
    rng = np.random.default_rng(4)
    queries = [at_cosine(data[rng.integers(len(data))], c, rng) for c in np.linspace(0.9, 1, 60)]
    queries += list(unit(rng.standard_normal((20, DIM))))
    queries += [data[i] for i in rng.integers(3000, len(data), 20)]  # clustered and sparse rows
    for q in queries:
        for threshold in (0.95, 0.99, 0.8):
            expected = brute(data, q, threshold)
            got = index.search(q, threshold)
            if expected is None:
                assert got is None
            else:
                assert got is not None and got[0] == f"k{expected[0]}"
                assert got[1] == pytest.approx(expected[1], abs=1e-5)


def test_just_above_and_just_below_the_threshold(data: np.ndarray) -> None:
    index = ExactIndex(DIM)
    index.add_many([f"k{i}" for i in range(len(data))], data)
    rng = np.random.default_rng(5)
    for i in rng.integers(0, len(data), 10):
        assert index.search(at_cosine(data[i], 0.9502, rng), 0.95) is not None
        below = index.search(at_cosine(data[i], 0.9498, rng), 0.95)
        assert below is None or below[0] != f"k{i}"


def test_remove_replace_and_reuse(data: np.ndarray) -> None:
    index = ExactIndex(DIM, capacity=4)
    index.add_many([f"k{i}" for i in range(3000)], data[:3000])
    assert index.search(data[10], 0.99) == ("k10", pytest.approx(1.0, abs=1e-6))
    assert index.remove("k10") and not index.remove("k10")
    assert index.search(data[10], 0.99) is None
    index.add("k11", data[10])  # replace k11's vector
    assert index.search(data[10], 0.99)[0] == "k11"
    assert index.search(data[11], 0.99) is None
    index.add("fresh", data[11])  # takes k10's free row
    assert len(index) == 3000 and index.search(data[11], 0.99)[0] == "fresh"


def test_bad_input() -> None:
    index = ExactIndex(8)
    with pytest.raises(ConfigError, match="dimensions"):
        index.add("k", np.ones(9))
    with pytest.raises(ConfigError, match="zero"):
        index.add("k", np.zeros(8))
    with pytest.raises(ConfigError, match="threshold"):
        index.search(np.ones(8), 0.0)
    with pytest.raises(ConfigError, match="exact"):
        make_index("annoy", 8)


def test_faiss_index_finds_near_duplicates_and_forgets(data: np.ndarray) -> None:
    index = FaissIndex(DIM)
    index.add_many([f"k{i}" for i in range(1000)], data[:1000])
    rng = np.random.default_rng(6)
    q = at_cosine(data[42], 0.97, rng)
    key, score = index.search(q, 0.95)
    assert key == "k42" and score == pytest.approx(0.97, abs=1e-4)
    assert index.remove("k42")
    assert index.search(q, 0.95) is None
    for i in range(300):  # enough removals to rebuild the graph
        index.remove(f"k{i}")
    assert len(index) == 700
    assert index.search(data[500], 0.99)[0] == "k500"

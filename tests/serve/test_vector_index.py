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
    out: np.ndarray = (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)
    return out


def key(found: tuple[str, float] | None) -> str | None:
    return None if found is None else found[0]


def at_cosine(x: np.ndarray, cosine: float, rng: np.random.Generator) -> np.ndarray:
    """A unit vector at exactly this cosine from unit vector x."""
    r = rng.standard_normal(x.shape[0])
    r -= (r @ x) * x
    r /= np.linalg.norm(r)
    out: np.ndarray = (cosine * x + np.sqrt(1 - cosine**2) * r).astype(np.float32)
    return out


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
    found = index.search(data[10], 0.99)
    assert found is not None and found[0] == "k10" and found[1] == pytest.approx(1.0, abs=1e-6)
    assert index.remove("k10") and not index.remove("k10")
    assert index.search(data[10], 0.99) is None
    index.add("k11", data[10])  # replace k11's vector
    assert key(index.search(data[10], 0.99)) == "k11"
    assert index.search(data[11], 0.99) is None
    index.add("fresh", data[11])  # takes k10's free row
    assert len(index) == 3000 and key(index.search(data[11], 0.99)) == "fresh"


def distribution(kind: str, n: int, seed: int) -> np.ndarray:
    """isotropic, clustered (topics), anisotropic (mean cosine ≈ 0.6, decaying spread) or
    anisotropic-white (the same mean, a white spread)."""
    rng = np.random.default_rng(seed)
    if kind == "isotropic":
        return unit(rng.standard_normal((n, DIM)))
    if kind == "clustered":
        centers = rng.standard_normal((50, DIM))
        return unit(centers[rng.integers(0, 50, n)] + 0.8 * rng.standard_normal((n, DIM)))
    mean = unit(rng.standard_normal(DIM))
    basis, _ = np.linalg.qr(rng.standard_normal((DIM, DIM)))
    spread = np.arange(1, DIM + 1) ** (-0.5 if kind == "anisotropic" else 0.0)
    spread /= np.linalg.norm(spread)
    return unit(1.22 * mean + (rng.standard_normal((n, DIM)) * spread) @ basis.T)


def check_against_brute_force(
    index: ExactIndex, rows: dict[str, np.ndarray], queries: list[np.ndarray]
) -> None:
    keys = list(rows)
    matrix = np.array([rows[k] for k in keys])
    for q in queries:
        for threshold in (0.95, 0.9, 0.99):
            expected = brute(matrix, q, threshold)
            got = index.search(q, threshold)
            if expected is None:
                assert got is None
            else:
                assert got is not None and got[0] == keys[expected[0]]
                assert got[1] == pytest.approx(expected[1], abs=1e-5)


KINDS = ("isotropic", "clustered", "anisotropic", "anisotropic-white")


@pytest.mark.parametrize("kind", KINDS)
def test_exact_on_every_distribution_through_removals_and_readditions(kind: str) -> None:
    data = distribution(kind, 7000, seed=11)
    base, extra = data[:6000], data[6000:]
    index = ExactIndex(DIM, capacity=256)
    rows = {f"k{i}": base[i] for i in range(6000)}
    index.add_many(list(rows), base)
    rng = np.random.default_rng(12)

    def queries() -> list[np.ndarray]:
        live = list(rows.values())
        picks, cosines = rng.integers(len(live), size=24), np.linspace(0.88, 1, 24)
        near = [at_cosine(live[i], c, rng) for i, c in zip(picks, cosines, strict=True)]
        return near + list(extra[rng.integers(len(extra), size=12)])  # misses from the set

    check_against_brute_force(index, rows, queries())
    for i in rng.choice(6000, 2500, replace=False):  # remove, replace, re-add: the sum moves
        assert index.remove(f"k{i}")
        del rows[f"k{i}"]
    for j, i in enumerate(rng.choice(list(rows), 300, replace=False)):
        rows[str(i)] = extra[j]
        index.add(str(i), extra[j])
    index.add_many([f"new{j}" for j in range(300, 1000)], extra[300:1000])
    rows.update((f"new{j}", extra[j]) for j in range(300, 1000))
    assert len(index) == len(rows)
    matrix = np.array(list(rows.values()))
    assert float(np.linalg.norm(index.centre - matrix.mean(axis=0))) <= 0.05 + 1e-6
    check_against_brute_force(index, rows, queries())


@pytest.mark.parametrize("kind", KINDS)
def test_just_above_and_just_below_on_every_distribution(kind: str) -> None:
    data = distribution(kind, 5000, seed=13)
    index = ExactIndex(DIM)
    index.add_many([f"k{i}" for i in range(len(data))], data)
    rng = np.random.default_rng(14)
    for i in rng.integers(0, len(data), 12):
        above = index.search(at_cosine(data[i], 0.9502, rng), 0.95)
        assert above is not None and above[1] >= 0.95
        below_q = at_cosine(data[i], 0.9498, rng)
        below, expected = index.search(below_q, 0.95), brute(data, below_q, 0.95)
        assert key(below) == (None if expected is None else f"k{expected[0]}")
        if below is not None and expected is not None:
            assert below[0] != f"k{i}" and below[1] == pytest.approx(expected[1], abs=1e-5)


def test_anisotropic_rows_are_centred_and_projected_not_scanned() -> None:
    data = distribution("anisotropic", 6000, seed=15)
    index = ExactIndex(DIM)
    index.add_many([f"k{i}" for i in range(len(data))], data)
    assert index.recentres >= 1 and index.mode == "projection"
    assert float(np.linalg.norm(index.centre - data.mean(axis=0))) < 1e-3
    rng = np.random.default_rng(16)
    for i in rng.integers(0, len(data), 20):
        assert index.search(at_cosine(data[i], 0.97, rng), 0.95) is not None
    assert index.pruned_searches == 20 and index.scanned_searches == 0


def test_a_white_spread_falls_back_to_the_matmul_and_probes_back() -> None:
    data = distribution("anisotropic-white", 6000, seed=17)
    index = ExactIndex(DIM)
    index.add_many([f"k{i}" for i in range(len(data))], data)
    assert index.mode == "signs"  # no principal directions to project on
    rng = np.random.default_rng(18)
    for i in rng.integers(0, len(data), 40):
        assert index.search(at_cosine(data[i], 0.97, rng), 0.95) is not None
    assert index.scanned_searches == 40  # the bound would not prune: every row scored
    for i in rng.integers(0, len(data), 40):  # a threshold the bound prunes at again
        assert index.search(at_cosine(data[i], 0.999, rng), 0.995) is not None
    assert index.pruned_searches > 0


def test_isotropic_rows_keep_the_sign_codes_around_the_origin() -> None:
    data = distribution("isotropic", 6000, seed=19)
    index = ExactIndex(DIM)
    index.add_many([f"k{i}" for i in range(len(data))], data)
    assert index.recentres == 0 and index.mode == "signs"
    rng = np.random.default_rng(20)
    for i in rng.integers(0, len(data), 10):
        assert key(index.search(at_cosine(data[i], 0.97, rng), 0.95)) == f"k{i}"
    assert index.pruned_searches == 10


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
    found = index.search(q, 0.95)
    assert found is not None
    assert found[0] == "k42" and found[1] == pytest.approx(0.97, abs=1e-4)
    assert index.remove("k42")
    assert index.search(q, 0.95) is None
    for i in range(300):  # enough removals to rebuild the graph
        index.remove(f"k{i}")
    assert len(index) == 700
    assert key(index.search(data[500], 0.99)) == "k500"

"""The between-size variance τ²: DerSimonian–Laird and the boundary-avoiding penalized mode."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from greenml.errors import ConfigError
from greenml.optimize.pooling import (
    boundary_avoiding_tau2,
    dersimonian_laird_tau2,
    penalized_score,
    weighted_line,
)


def reml_tau2(means: list[float], variances: list[float]) -> float:
    """The plain REML estimate, by its usual fixed-point iteration (truncated at zero)."""
    tau2 = 0.0
    for _ in range(2000):
        weights = [1.0 / (v + tau2) for v in variances]
        total = sum(weights)
        pooled = sum(w * y for w, y in zip(weights, means, strict=True)) / total
        squares = sum(w * w for w in weights)
        step = sum(
            w * w * ((y - pooled) ** 2 - v)
            for w, y, v in zip(weights, means, variances, strict=True)
        )
        tau2 = max(0.0, step / squares + 1.0 / total)
    return tau2


def test_tied_means_never_give_zero() -> None:
    """Identical means: DerSimonian–Laird says the sizes share one mean; the new one does not."""
    for k in (3, 5, 8):
        means, variances = [1.4] * k, [0.01] * k
        assert dersimonian_laird_tau2(means, variances) == 0.0
        assert boundary_avoiding_tau2(means, variances) == pytest.approx(0.01 / (k - 1), rel=1e-6)
    unequal = boundary_avoiding_tau2([1.4] * 4, [0.01, 0.002, 0.05, 0.01])
    assert 0.0 < unequal < 0.05


def test_close_means_give_zero_with_dl_but_not_here() -> None:
    """Sizes 3 % apart in log-epochs with 10 % noise: Q < k - 1, DL truncates at zero."""
    means = [math.log(4.1), math.log(4.2), math.log(4.3), math.log(4.4), math.log(4.2)]
    variances = [0.01] * 5
    assert dersimonian_laird_tau2(means, variances) == 0.0
    tau2 = boundary_avoiding_tau2(means, variances)
    assert tau2 > 0.001
    assert penalized_score(tau2, means, variances) == pytest.approx(0.0, abs=1e-6 / tau2)


def test_agrees_with_reml_and_dl_when_the_sizes_clearly_differ() -> None:
    rng = random.Random(4)
    means = [rng.gauss(2.0, 0.8) for _ in range(10)]
    variances = [0.005 * rng.uniform(0.5, 2.0) for _ in range(10)]
    reml = reml_tau2(means, variances)
    assert reml > 0.2
    assert boundary_avoiding_tau2(means, variances) == pytest.approx(reml, rel=0.03)
    assert boundary_avoiding_tau2(means, variances) == pytest.approx(
        dersimonian_laird_tau2(means, variances), rel=0.15
    )


def test_two_sizes_are_pooled_with_a_finite_tau2_and_one_has_nothing_to_pool() -> None:
    assert boundary_avoiding_tau2([1.0, 1.0], [0.01, 0.01]) == pytest.approx(0.01)
    assert boundary_avoiding_tau2([1.0, 3.0], [0.01, 0.01]) == pytest.approx(
        reml_tau2([1.0, 3.0], [0.01, 0.01]), rel=0.02
    )
    assert boundary_avoiding_tau2([1.0], [0.01]) == 0.0
    assert dersimonian_laird_tau2([1.0], [0.01]) == 0.0


def test_bad_inputs_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="variances"):
        boundary_avoiding_tau2([1.0, 2.0, 3.0], [0.1, 0.1])
    with pytest.raises(ConfigError, match="positive"):
        boundary_avoiding_tau2([1.0, 2.0, 3.0], [0.1, 0.0, 0.1])
    with pytest.raises(ConfigError, match="finite"):
        dersimonian_laird_tau2([1.0, math.nan, 3.0], [0.1, 0.1, 0.1])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(-5.0, 5.0, allow_nan=False),
            st.floats(1e-5, 10.0, allow_nan=False),
        ),
        min_size=2,
        max_size=15,
    )
)
def test_always_positive_finite_and_a_root_of_the_score(groups: list[tuple[float, float]]) -> None:
    means = [m for m, _ in groups]
    variances = [v for _, v in groups]
    tau2 = boundary_avoiding_tau2(means, variances)
    assert 0.0 < tau2 < math.inf
    # the score changes sign there: positive just below, negative just above
    assert penalized_score(tau2 * (1 - 1e-6), means, variances) >= -1e-9 / tau2
    assert penalized_score(tau2 * (1 + 1e-6), means, variances) <= 1e-9 / tau2


def test_weighted_line_is_the_least_squares_fit() -> None:
    xs, ys, ws = [0.0, 1.0, 2.0, 3.0], [1.0, 3.1, 4.9, 7.0], [1.0, 2.0, 1.0, 0.5]
    line = weighted_line(ys, ws, xs)
    # the normal equations: the weighted residuals sum to zero and are orthogonal to x
    residuals = [y - line.at(x) for x, y in zip(xs, ys, strict=True)]
    assert sum(w * r for w, r in zip(ws, residuals, strict=True)) == pytest.approx(0.0, abs=1e-12)
    assert sum(w * r * x for w, r, x in zip(ws, residuals, xs, strict=True)) == pytest.approx(
        0.0, abs=1e-12
    )
    assert line.slope == pytest.approx(2.0, abs=0.05)
    flat = weighted_line(ys, ws, None)
    assert (flat.slope, flat.spread) == (0.0, 0.0)
    mean = sum(w * y for w, y in zip(ws, ys, strict=True)) / sum(ws)
    assert flat.at(5.0) == pytest.approx(mean)
    assert weighted_line(ys, ws, [2.0] * 4).slope == 0.0  # no spread in x: no slope


def test_means_on_a_line_in_the_covariate_barely_differ_around_it() -> None:
    """Log-epochs falling steadily with log batch size (ImageNet: 32, 25, 21, 20 epochs)."""
    sizes = [128, 192, 256, 360, 512]
    xs = [math.log(b) for b in sizes]
    means = [4.0 - 0.45 * x for x in xs]
    variances = [0.004] * 5
    around_mean = boundary_avoiding_tau2(means, variances)
    around_line = boundary_avoiding_tau2(means, variances, xs)
    assert around_mean > 0.02  # the sizes clearly differ from their mean ...
    assert 0.0 < around_line < 0.004  # ... and not from the line: about v / (k - 2)
    score = penalized_score(around_line, means, variances, xs)
    assert score == pytest.approx(0.0, abs=1e-6 / around_line)
    # two groups always lie on a line: the covariate is ignored
    assert boundary_avoiding_tau2(means[:2], variances[:2], xs[:2]) == pytest.approx(
        boundary_avoiding_tau2(means[:2], variances[:2])
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(-3.0, 3.0), min_size=3, max_size=9),
    st.floats(1e-4, 1.0),
    st.floats(-2.0, 2.0),
)
def test_a_line_never_leaves_more_between_group_variance(
    noise: list[float], variance: float, slope: float
) -> None:
    """Equal sampling variances: the line's residuals are never larger than the mean's."""
    xs = [float(i) for i in range(len(noise))]
    means = [slope * x + e for x, e in zip(xs, noise, strict=True)]
    variances = [variance] * len(means)
    around_line = boundary_avoiding_tau2(means, variances, xs)
    assert 0.0 < around_line <= boundary_avoiding_tau2(means, variances) * (1 + 1e-9)


def test_a_covariate_needs_one_finite_value_per_group() -> None:
    with pytest.raises(ConfigError, match="covariate"):
        boundary_avoiding_tau2([1.0, 2.0, 3.0], [0.1] * 3, [1.0, 2.0])
    with pytest.raises(ConfigError, match="covariate"):
        boundary_avoiding_tau2([1.0, 2.0, 3.0], [0.1] * 3, [1.0, math.nan, 2.0])

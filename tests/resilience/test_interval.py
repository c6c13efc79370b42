"""Young's and Daly's intervals, the default rates, and the interval policies."""

from __future__ import annotations

import math
from datetime import datetime, timezone

import pytest

from greenml.errors import ConfigError
from greenml.resilience.interval import daly_interval_s, interruption_rate, young_interval_s
from greenml.resilience.policy import Adaptive, FixedInterval, YoungDaly


def test_young_is_the_square_root_of_twice_cost_times_mtbf() -> None:
    assert young_interval_s(60.0, 3600.0) == pytest.approx(math.sqrt(2 * 60 * 3600))


def test_daly_adds_higher_order_terms_and_caps_at_the_mtbf() -> None:
    delta, m = 60.0, 3600.0
    ratio = delta / (2 * m)
    expected = math.sqrt(2 * delta * m) * (1 + math.sqrt(ratio) / 3 + ratio / 9) - delta
    assert daly_interval_s(delta, m) == pytest.approx(expected)
    # Cheap checkpoints: Daly converges to Young.
    assert daly_interval_s(1.0, 1e6) == pytest.approx(young_interval_s(1.0, 1e6), rel=0.01)
    assert daly_interval_s(800.0, 300.0) == 300.0


def test_daly_interval_minimizes_expected_waste_numerically() -> None:
    """Daly's τ is near the true minimum of the exponential-failure waste model."""
    delta, m = 120.0, 3600.0 / 0.041

    def expected_time_per_work(tau: float) -> float:
        # Daly (2006) eq. for the expected wall time of one segment, restart cost 0.
        return m * math.exp(0.0) * (math.exp((tau + delta) / m) - 1.0) / tau

    taus = [delta * k / 10 for k in range(1, 2000)]
    best = min(taus, key=expected_time_per_work)
    assert daly_interval_s(delta, m) == pytest.approx(best, rel=0.02)


def test_default_rates_by_accelerator_and_weekday() -> None:
    h100 = interruption_rate("NVIDIA H100 80GB HBM3")
    assert h100.per_hour == pytest.approx(0.041)
    saturday = datetime(2026, 11, 21, 12, tzinfo=timezone.utc)
    monday = datetime(2026, 11, 23, 12, tzinfo=timezone.utc)
    assert h100.at(saturday) == pytest.approx(0.041 * 0.6)
    assert h100.at(monday) == pytest.approx(0.041)
    assert interruption_rate("v100").per_hour == pytest.approx(0.008)
    with pytest.raises(ConfigError, match="known: A100, H100, V100"):
        interruption_rate("T4")


def test_policies() -> None:
    assert FixedInterval(600).interval_s() == 600
    with pytest.raises(ConfigError):
        FixedInterval(0)
    yd = YoungDaly(60.0, 0.023)
    assert yd.interval_s() == pytest.approx(daly_interval_s(60.0, 3600 / 0.023))
    with pytest.raises(ConfigError, match="interruption rate must be > 0"):
        YoungDaly(60.0, 0.0)


def test_adaptive_policy_learns_cost_and_rate() -> None:
    policy = Adaptive(initial_cost_s=60.0, prior_per_hour=0.01, prior_hours=10.0)
    start = policy.interval_s()
    assert start == pytest.approx(YoungDaly(60.0, 0.01).interval_s())
    for _ in range(20):
        policy.record_checkpoint(240.0)
    assert policy.cost_s == pytest.approx(240.0, rel=0.01)
    longer = policy.interval_s()
    assert longer > start
    policy.record_uptime(10 * 3600.0)
    for _ in range(4):
        policy.record_interruption()
    assert policy.interruptions_per_hour == pytest.approx((0.1 + 4) / 20.0)
    assert policy.interval_s() < longer

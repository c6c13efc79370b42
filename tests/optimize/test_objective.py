"""The energy–time cost and the choice of a power limit from profiles."""

from __future__ import annotations

import pytest

from greenml.errors import ConfigError
from greenml.optimize.objective import LimitProfile, energy_time_cost, pick_power_limit

# A V100-like curve: lower limits save energy until the slowdown costs more than it saves.
PROFILES = [
    LimitProfile(300, time_s=10.0, energy_j=2600.0),
    LimitProfile(250, time_s=10.3, energy_j=2300.0),
    LimitProfile(200, time_s=11.0, energy_j=2050.0),
    LimitProfile(150, time_s=13.5, energy_j=1950.0),
    LimitProfile(100, time_s=20.0, energy_j=1900.0),
]


def test_cost_is_energy_at_eta_one_and_time_at_eta_zero() -> None:
    assert energy_time_cost(100.0, 2.0, 1.0, 300.0) == 100.0
    assert energy_time_cost(100.0, 2.0, 0.0, 300.0) == 600.0
    assert energy_time_cost(100.0, 2.0, 0.5, 300.0) == 350.0


def test_eta_moves_the_choice_from_fastest_to_most_frugal() -> None:
    assert pick_power_limit(PROFILES, 0.0, 300).power_limit_w == 300
    assert pick_power_limit(PROFILES, 1.0, 300).power_limit_w == 100
    assert pick_power_limit(PROFILES, 0.5, 300).power_limit_w == 200


def test_slowdown_budget_minimizes_energy_among_fast_enough_limits() -> None:
    assert pick_power_limit(PROFILES, 0.5, 300, max_slowdown=0.05).power_limit_w == 250
    assert pick_power_limit(PROFILES, 0.5, 300, max_slowdown=0.10).power_limit_w == 200
    assert pick_power_limit(PROFILES, 0.5, 300, max_slowdown=0.0).power_limit_w == 300


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ConfigError, match="eta must be between 0 and 1"):
        pick_power_limit(PROFILES, 1.5, 300)
    with pytest.raises(ConfigError, match="no power limit was profiled"):
        pick_power_limit([], 0.5, 300)
    with pytest.raises(ConfigError, match="slowdown must be >= 0"):
        pick_power_limit(PROFILES, 0.5, 300, max_slowdown=-0.1)

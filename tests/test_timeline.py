from __future__ import annotations

import pytest

from greenml.timeline import PowerTimeline


def make(points: list[tuple[float, float]]) -> PowerTimeline:
    line = PowerTimeline()
    for t, w in points:
        line.append(t, w)
    return line


def test_trapezoid_over_a_ramp_is_exact() -> None:
    line = make([(0, 0), (10, 200)])
    assert line.energy_between(0, 10) == pytest.approx(1000.0)
    # linear power: the integral from 0 to 5 is 0.5 * 5 * 100
    assert line.energy_between(0, 5) == pytest.approx(250.0)
    assert line.power_at(2.5) == pytest.approx(50.0)


def test_power_is_held_before_first_and_after_last_sample() -> None:
    line = make([(10, 100), (20, 300)])
    assert line.energy_between(0, 10) == pytest.approx(1000.0)
    assert line.energy_between(20, 25) == pytest.approx(1500.0)
    assert line.energy_between(15, 15) == 0.0
    assert line.energy_between(16, 15) == 0.0


def test_out_of_order_samples_are_ignored_and_empty_timeline_is_zero() -> None:
    line = make([(1, 10), (1, 99), (0.5, 99), (2, 10)])
    assert len(line) == 2
    assert PowerTimeline().energy_between(0, 10) == 0.0
    assert PowerTimeline().power_at(3) is None


def test_many_windows_match_the_whole() -> None:
    line = make([(float(t), 50.0 + (t % 7) * 10) for t in range(1000)])
    pieces = sum(line.energy_between(a, a + 3.3) for a in [i * 3.3 for i in range(300)])
    assert pieces == pytest.approx(line.energy_between(0, 990), rel=1e-12)

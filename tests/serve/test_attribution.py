"""Time-overlap attribution, exact on hand-made power traces and intervals."""

from __future__ import annotations

import numpy as np
import pytest

from greenml.errors import ConfigError
from greenml.serve.attribution import attribute_energy, cumulative_energy_j


def test_step_power_overlaps_and_idle_gaps() -> None:
    # 100 W on [0,10), 200 W on [10,20), 50 W from 20 on
    a = attribute_energy(
        [0, 10, 20, 30], [100, 200, 50, 50],
        starts_s=[2, 5, 25], ends_s=[12, 8, 28],
        interpolation="step",
    )  # fmt: skip
    # A alone 2-5 (300 J), shares 5-8 with B (300 J / 2 each), alone 8-12 (200 + 400 J)
    assert a.energy_j.tolist() == pytest.approx([1050.0, 150.0, 150.0], abs=1e-9)
    # idle: 0-2 (200), 12-20 (1600), 20-25 (250), 28-30 (100)
    assert a.idle_energy_j == pytest.approx(2150.0, abs=1e-9)
    assert a.busy_energy_j == pytest.approx(1350.0, abs=1e-9)
    assert a.idle_energy_j + a.busy_energy_j == pytest.approx(3500.0)  # all energy, once
    assert a.span_s == (0.0, 30.0)


def test_linear_power_is_integrated_as_the_meter_does() -> None:
    # a ramp 0 → 100 W over 10 s: 125 J in the first 5 s, 375 J in the last 5 s
    a = attribute_energy([0, 10], [0, 100], starts_s=[0, 5], ends_s=[10, 10])
    assert a.energy_j.tolist() == pytest.approx([125 + 187.5, 187.5])
    assert a.idle_energy_j == pytest.approx(0.0)


def test_three_way_overlap_and_identical_intervals() -> None:
    a = attribute_energy(
        [0, 100], [90, 90], starts_s=[0, 0, 0, 4], ends_s=[3, 3, 6, 4], interpolation="step"
    )
    # 0-3: three in flight, 90 J each; 3-6: the third alone, 270 J; the empty request: 0 J
    assert a.energy_j.tolist() == pytest.approx([90.0, 90.0, 360.0, 0.0])


def test_power_is_held_outside_the_samples() -> None:
    a = attribute_energy([10, 20], [50, 80], starts_s=[0, 25], ends_s=[5, 30], span_s=(0, 30))
    assert a.energy_j.tolist() == pytest.approx([250.0, 400.0])  # 50 W before, 80 W after
    # over 0-30 s: 500 J held + 650 J ramp + 800 J held = 1950 J, of which requests took 650
    assert a.idle_energy_j == pytest.approx(1300.0)


def test_conservation_on_random_traffic() -> None:
    rng = np.random.default_rng(7)
    times = np.cumsum(rng.uniform(0.05, 0.2, 400))
    power = rng.uniform(50, 400, times.size)
    starts = rng.uniform(times[0], times[-1] - 1, 300)
    ends = starts + rng.uniform(0, 1, 300)
    a = attribute_energy(times, power, starts, ends)
    total = cumulative_energy_j(times, power, np.array([times[-1]]))[0]
    # every joule of the span is either idle or shared out among requests, exactly once
    assert a.energy_j.sum() == pytest.approx(a.busy_energy_j, rel=1e-9)
    assert a.busy_energy_j + a.idle_energy_j == pytest.approx(total, rel=1e-9)
    # a request never gets more than the whole power over its interval
    alone = cumulative_energy_j(times, power, ends) - cumulative_energy_j(times, power, starts)
    assert np.all(a.energy_j <= alone + 1e-9)


@pytest.mark.parametrize(
    ("times", "power", "starts", "ends", "message"),
    [
        ([0, 0], [1, 1], [], [], "strictly increasing"),
        ([], [], [], [], "non-empty"),
        ([0, 1], [1], [], [], "equal length"),
        ([0, 1], [1, 1], [2], [1], "ends before it starts"),
        ([0, 1], [1, float("nan")], [], [], "finite"),
    ],
)
def test_bad_input(
    times: list[float], power: list[float], starts: list[float], ends: list[float], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        attribute_energy(times, power, starts, ends)


def test_unknown_interpolation() -> None:
    with pytest.raises(ConfigError, match="interpolation"):
        attribute_energy([0, 1], [1, 1], [0], [1], interpolation="cubic")  # type: ignore[arg-type]

"""Thermally steady state before measuring: the criterion, and the optimizer waiting for it."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from greenml.errors import ConfigError
from greenml.measure.meter import Meter
from greenml.optimize.steady import SteadyState
from tests.fakes.fake_pynvml import FakeNvml
from tests.integrations import conftest as gpu_fixtures
from tests.optimize.test_power_limit import optimizer

_private_state = gpu_fixtures._private_state
nvml = gpu_fixtures.nvml
meter = gpu_fixtures.meter


def warming(t: float) -> float:
    """A GPU heating up: power rises 20 % towards 300 W with a 10-s time constant."""
    return 300.0 * (1.0 - 0.2 * math.exp(-t / 10.0))


def test_waits_until_the_power_stays_within_the_tolerance_over_the_window() -> None:
    steady = SteadyState()
    t = 0.0
    while not steady.add(t, warming(t)):
        t += 0.5
    # A spread of 3 % over 5 s: the 5-s drift 60·e^(-t/10)·(1 − e^(-0.5)) ≤ 3 % of ~290 W
    # from t ≈ 10 s on; a one-off window would have measured 20 % low at t = 0.
    assert 9.0 <= t <= 20.0, t
    assert steady.outcome == f"settled after {t:.1f} s"
    assert "≤ 3 %" in steady.criterion and "5 s" in steady.criterion


def test_a_power_that_never_settles_is_measured_anyway_and_labelled() -> None:
    steady = SteadyState(max_wait_s=20.0)
    t, done = 0.0, False
    while not done:
        done = steady.add(t, 200.0 if int(t) % 2 else 300.0)  # a square wave: never settles
        t += 0.5
    assert steady.outcome == "not settled after 20 s: measured anyway"
    empty = SteadyState(max_wait_s=1.0)
    assert not empty.add(0.0, 0.0) and empty.add(1.0, 0.0)
    assert empty.outcome == "no power reading: settling not judged"


@pytest.mark.parametrize("kw", [{"tolerance_rel": 0.0}, {"window_s": 0.0}, {"max_wait_s": -1.0},
                                {"min_readings": 1}])  # fmt: skip
def test_a_bad_criterion_is_refused(kw: dict[str, float]) -> None:
    with pytest.raises(ConfigError, match="steady-state criterion"):
        SteadyState(**kw)  # type: ignore[arg-type]


@given(st.lists(st.floats(0, 2000, allow_nan=False), min_size=1, max_size=60))
def test_it_always_ends_by_the_maximum_wait(powers: list[float]) -> None:
    steady = SteadyState(max_wait_s=10.0)
    ended = [steady.add(i * 0.5, p) for i, p in enumerate(powers)]
    if len(powers) * 0.5 > 10.0:
        assert any(ended)
    if any(ended):
        assert steady.outcome


def test_the_optimizer_profiles_a_limit_only_once_the_power_has_settled(
    nvml: FakeNvml, meter: Meter
) -> None:
    opt = optimizer(nvml, meter, warmup_steps=1, profile_steps=1, wait_for_steady=True)
    entered = nvml.clock()
    while opt.phase != "profile":
        with opt.step():
            nvml.run_step()
            meter.sample_now()
    assert nvml.clock() - entered >= 5.0  # at least the 5-s window, not one warm-up step
    summary = opt.summary()["steady_state"]
    assert "≤ 3 %" in summary["criterion"]
    assert summary["per_limit"] and summary["per_limit"][0].startswith("250 W: settled after")
    opt.close()


class WarmingMeter:
    """A Meter's two calls over a GPU that heats up: each step takes 0.5 s."""

    def __init__(self) -> None:
        self.t = 0.0
        self.power = 0.0

    def sample_now(self) -> None:
        self.power = warming(self.t)

    def current_power_w(self) -> float:
        return self.power

    def step(self) -> None:
        self.t += 0.5


def test_a_sweep_configuration_runs_steps_until_the_power_settles() -> None:
    from greenml.optimize.steady import run_until_steady

    gpu = WarmingMeter()
    outcome = run_until_steady(gpu.step, gpu, clock=lambda: gpu.t)
    assert outcome.startswith("settled after") and "≤ 3 %" in outcome
    assert 9.0 <= gpu.t <= 20.0  # steps ran through the warm-up, not one of them

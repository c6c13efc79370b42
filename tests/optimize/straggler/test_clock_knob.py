"""The straggler planner and its simulator with locked graphics clocks as the knob (Perseus)."""

from __future__ import annotations

import json

import pytest

from greenml.cli import main
from greenml.errors import ConfigError
from greenml.optimize.straggler.planner import PowerCurve, plan_power
from greenml.optimize.straggler.sim import V100_MAX_CLOCK_MHZ, SimConfig, simulate, v100_curve


def test_a_clock_curve_keeps_the_operating_points() -> None:
    limits = v100_curve("imagenet", 0.5)
    clocks = limits.as_clock_curve(V100_MAX_CLOCK_MHZ)
    assert (clocks.knob, clocks.unit, limits.unit) == ("clock", "MHz", "W")
    assert clocks.max_w == V100_MAX_CLOCK_MHZ
    assert clocks.time_at(clocks.max_w) == pytest.approx(limits.time_at(limits.max_w))
    assert list(clocks.limits_w) == sorted(clocks.limits_w)
    # time ∝ 1/clock: half the clock would double the time
    lowest = clocks.min_w
    assert clocks.time_at(lowest) == pytest.approx(
        limits.time_at(limits.max_w) * V100_MAX_CLOCK_MHZ / lowest, rel=0.01
    )
    with pytest.raises(ConfigError):
        clocks.as_clock_curve(1000.0)


def test_a_clock_plan_says_so_and_slows_only_the_fast_ranks() -> None:
    curve = v100_curve("imagenet", 0.5).as_clock_curve(V100_MAX_CLOCK_MHZ)
    plan = plan_power([curve] * 3, [0.5, 0.6, 0.5], step_w=15.0)
    assert plan.knob == "clock" and plan.to_dict()["unit"] == "MHz"
    assert plan.critical_rank == 1 and plan.limits_w[1] == curve.max_w
    assert plan.limits_w[0] < curve.max_w and plan.limits_w[2] < curve.max_w


def test_one_plan_has_one_knob() -> None:
    watts = v100_curve("imagenet", 0.5)
    with pytest.raises(ConfigError, match="same knob"):
        plan_power([watts, watts.as_clock_curve(1380.0)], [0.5, 0.5])
    with pytest.raises(ConfigError, match="knob must be"):
        PowerCurve((1.0,), (1.0,), (1.0,), knob="voltage")


def test_the_simulator_covers_both_knobs() -> None:
    for knob in ("power-limit", "clock"):
        result = simulate(SimConfig(ranks=8, steps=200, knob=knob))
        data = result.to_dict()
        assert data["knob"] == knob and result.saved_rel > 0.03
        assert abs(result.step_time_change_rel) < 0.02
        assert ("clock_model" in data["assumptions"]) is (knob == "clock")
        assert {p["knob"] for p in data["plans"]} == {knob}


def test_cli_straggler_sim_with_clocks(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["optimize", "straggler-sim", "--knob", "clock", "--seeds", "1",
                 "--steps", "100", "--json"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["knob"] == "clock" and out["unit"] == "MHz"
    assert main(["optimize", "straggler-sim", "--knob", "volts"]) == 2

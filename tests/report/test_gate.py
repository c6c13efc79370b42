"""The CI energy gate: threshold syntax, pass / fail / within-noise, several runs, units."""

from __future__ import annotations

import math
from typing import Any

import pytest

from greenml.errors import ConfigError
from greenml.report.gate import check, parse_threshold
from tests.run_records import record


def runs(*joules: float, rel: float = 0.01, **kw: Any) -> list[dict[str, Any]]:
    tags = kw.pop("tags", {"samples": "1000"})
    return [record(j, rel=rel, tags=tags, **kw) for j in joules]


@pytest.mark.parametrize(
    ("text", "value"),
    [("5%", 0.05), ("5", 0.05), ("+5 %", 0.05), ("0.5%", 0.005), ("12.5", 0.125), ("0", 0.0),
     ("0%", 0.0), ("1", 0.01), (".5%", 0.005)],
)  # fmt: skip
def test_threshold_syntax(text: str, value: float) -> None:
    assert parse_threshold(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["0.05", "abc", "-5%", "5%%", "", "5 percent"])
def test_threshold_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="--max-increase"):
        parse_threshold(text)


def test_fail_beyond_noise_and_its_line() -> None:
    verdict = check(runs(100.0), runs(112.0), 0.05)
    assert verdict.outcome == "fail" and not verdict.passed
    assert verdict.change.change_rel == pytest.approx(0.12)
    assert verdict.change.uncertainty_rel == pytest.approx(1.12 * math.hypot(0.01, 0.01))
    assert verdict.line() == (
        "greenml check: FAIL energy per 1000 samples +12.0 % ± 1.6 % "
        "(baseline 100 J, 1 run; candidate 112 J, 1 run) > +5 % allowed beyond its uncertainty"
    )


def test_pass_within_allowance() -> None:
    verdict = check(runs(100.0), runs(103.0), 0.05)
    assert verdict.outcome == "pass" and verdict.passed
    assert verdict.line().startswith("greenml check: PASS energy per 1000 samples +3.0 % ± 1.5 %")
    assert verdict.line().endswith("within +5 % allowed")


def test_increase_above_allowance_but_within_noise_passes() -> None:
    verdict = check(runs(100.0, rel=0.05), runs(108.0, rel=0.05), 0.05)
    # r = 8 %, u = 1.08 × √2 × 5 % = 7.6 %: r − u = 0.4 % is not above 5 %
    assert verdict.outcome == "inconclusive" and not verdict.passed
    assert "above +5 % allowed only within its uncertainty: about" in verdict.line()


def test_decrease_passes() -> None:
    assert check(runs(100.0), runs(60.0), 0.0).outcome == "pass"


def test_the_rule_is_increase_minus_uncertainty_above_threshold() -> None:
    base, cand = runs(100.0, rel=0.03), runs(120.0, rel=0.03)
    moved = check(base, cand, 0.0).change
    edge = moved.change_rel - moved.uncertainty_rel
    assert check(base, cand, edge + 1e-9).outcome == "inconclusive"
    assert check(base, cand, edge - 1e-9).outcome == "fail"


def test_several_runs_use_means_and_spread() -> None:
    verdict = check(runs(100.0, 100.0, 100.0), runs(110.0, 130.0, 120.0), 0.05)
    assert verdict.candidate.value == pytest.approx(120.0 / 1000)
    assert verdict.candidate.spread_rel == pytest.approx(10.0 / math.sqrt(3) / 120.0)
    assert verdict.candidate.uncertainty_rel == verdict.candidate.spread_rel
    assert verdict.baseline.uncertainty_rel == pytest.approx(0.01)
    assert verdict.outcome == "fail"
    assert "(baseline 100 J, 3 runs; candidate 120 J, 3 runs)" in verdict.line()


def test_a_noisy_candidate_group_does_not_fail() -> None:
    verdict = check(runs(100.0, 100.0), runs(80.0, 160.0), 0.05)
    assert verdict.change.change_rel == pytest.approx(0.2)
    assert verdict.outcome == "inconclusive"


def test_work_normalizes_runs_of_different_size() -> None:
    base = runs(100.0, tags={"samples": "1000"})
    cand = runs(200.0, tags={"work": "2000", "work_unit": "samples"})
    verdict = check(base, cand, 0.05)
    assert verdict.change.change_rel == pytest.approx(0.0)
    assert verdict.unit == "samples"


def test_per_run_when_no_work_is_known() -> None:
    verdict = check(runs(100.0, tags={}), runs(100.0, tags={}), 0.05)
    assert verdict.unit is None
    assert "energy per run +0.0 %" in verdict.line()


def test_tokens_per_million() -> None:
    verdict = check(runs(10.0, tags={"tokens": "1000"}), runs(10.0, tags={"tokens": "1000"}), 0.05)
    assert "energy per 1M tokens" in verdict.line()
    assert "baseline 10.0 kJ" in verdict.line()


def test_bad_input() -> None:
    with pytest.raises(ConfigError, match="different units of work"):
        check(runs(100.0), runs(100.0, tags={"tokens": "5"}), 0.05)
    with pytest.raises(ConfigError, match="different units of work"):
        check(runs(100.0), runs(100.0, tags={}), 0.05)
    with pytest.raises(ConfigError, match="only completed runs"):
        check(runs(100.0), runs(100.0, status="incomplete"), 0.05)
    with pytest.raises(ConfigError, match="at least one baseline"):
        check([], runs(100.0), 0.05)
    with pytest.raises(ConfigError, match="0 or more"):
        check(runs(100.0), runs(100.0), -0.1)
    broken = runs(100.0)[0]
    del broken["energy"]["uncertainty_rel"]
    with pytest.raises(ConfigError, match="states no energy uncertainty"):
        check([broken], runs(100.0), 0.05)


def test_verdict_as_json() -> None:
    data = check(runs(100.0), runs(112.0), 0.05).to_dict()
    assert data["outcome"] == "fail" and data["passed"] is False
    assert data["increase_rel"] == pytest.approx(0.12)
    assert data["baseline_j_per_unit"] == pytest.approx(0.1)
    assert data["unit"] == "samples"
    assert len(data["baseline_runs"]) == 1


def test_on_the_same_setup_the_model_error_cancels_with_two_runs_per_side() -> None:
    # A CPU-model runner (±50 %): the TDP error is the same on both sides.
    base = runs(100.0, 101.0, 99.0, rel=0.5)
    cand = runs(120.0, 121.0, 119.0, rel=0.5)
    verdict = check(base, cand, 0.05)
    assert verdict.outcome == "fail"  # +20 % ± ~1.4 %: a real regression
    assert verdict.change.uncertainty_rel < 0.02
    # one run a side: the run-to-run noise is unknown, the conservative rule stays
    single = check(runs(100.0, rel=0.5), runs(120.0, rel=0.5), 0.05)
    assert single.outcome == "inconclusive"
    # different setups (a GPU on one side): nothing cancels
    other = check(
        base,
        [record(j, rel=0.5, gpu_j=50.0, tags={"samples": "1000"}) for j in (120.0, 121.0)],
        0.05,
    )
    assert other.outcome == "inconclusive"


# --------------------------------------------------- dynamic part on a shared machine


def split(joules: float, static_j: float, **kw: Any) -> dict[str, Any]:
    """A CPU-only run whose process-scope model split its energy: dynamic + static."""
    out = record(joules, rel=kw.pop("rel", 0.01), tags={"samples": "1000"}, **kw)
    cpu0 = out["energy"]["components"]["cpu"]["devices"]["cpu0"]
    cpu0["parts"] = {
        "dynamic": {"energy_j": cpu0["energy_j"] - static_j, "label": "CPU-seconds × 45 W"},
        "static": {"energy_j": static_j, "label": "idle floor over the wall-clock time"},
    }
    return out


def test_busy_neighbours_do_not_fail_the_gate_when_runs_have_their_dynamic_part() -> None:
    # the same work: 20 J dynamic alone; beside busy neighbours it took longer, so its
    # static share of the idle floor grew from 5 J to 9 J (+16 % in total)
    alone, crowded = [split(25.0, 5.0)], [split(29.2, 9.0)]
    verdict = check(alone, crowded, 0.05)
    assert verdict.compared == "dynamic"
    assert verdict.outcome == "pass"
    assert verdict.change.change_rel == pytest.approx(0.01)
    assert verdict.baseline.value == pytest.approx(20.0 / 1000)
    assert "dynamic part: the total less the CPU's static idle-floor share" in verdict.line()
    assert verdict.to_dict()["compared"] == "dynamic"
    total = check(alone, crowded, 0.05, compare="total")
    assert total.compared == "total" and total.outcome == "fail"
    assert "dynamic" not in total.line()


def test_the_total_is_compared_when_a_run_has_no_dynamic_part() -> None:
    old = record(25.0, rel=0.01, tags={"samples": "1000"})  # stored before parts existed
    verdict = check([old], [split(25.5, 5.0)], 0.05)
    assert verdict.compared == "total"
    assert verdict.to_dict()["compared"] == "total"
    with pytest.raises(ConfigError, match=r"no dynamic/static split.*compare the total"):
        check([old], [split(25.5, 5.0)], 0.05, compare="dynamic")
    with pytest.raises(ConfigError, match="compare must be one of"):
        check([old], [old], 0.05, compare="some")


def test_dynamic_energy_keeps_gpu_and_dram_and_their_uncertainty() -> None:
    from greenml.report.gate import dynamic_energy

    run = split(125.0, 5.0, gpu_j=100.0, rel=0.1)  # cpu 25 J of which 5 J static
    amount = dynamic_energy(run)
    assert amount is not None
    assert amount.value == pytest.approx(120.0)
    # gpu ±10 J and cpu ±2 J (10 % of its 20 J dynamic), independent: in quadrature
    assert amount.uncertainty_rel == pytest.approx(math.hypot(10.0, 2.0) / 120.0)
    assert dynamic_energy(record(10.0)) is None


def test_a_unit_no_run_states_is_an_error_not_a_silent_per_run_comparison() -> None:
    base, cand = record(energy_j=100.0), record(energy_j=110.0)
    with pytest.raises(ConfigError, match="no run states work in 'tokens'"):
        check([base], [cand], 0.05, unit="tokens")

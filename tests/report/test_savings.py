"""Savings report: money first, significance both ways, per-year scaling, payback, figure."""

from __future__ import annotations

import math
from typing import Any

import pytest

from greenml.errors import ConfigError
from greenml.report import savings
from greenml.report.savings_sections import significance
from tests.run_records import J_PER_KWH, record


def runs(*kwh: float, rel: float = 0.05, **kw: Any) -> list[dict[str, Any]]:
    tags = kw.pop("tags", {"samples": "1000"})
    return [record(k * J_PER_KWH, rel=rel, tags=tags, **kw) for k in kwh]


def text(report: savings.Report) -> str:
    return "\n".join(p for s in report.sections for p in s.paragraphs)


def test_significant_saving_leads_with_money_and_payback() -> None:
    report = savings.compare(
        runs(10, 10), runs(7, 7), runs_per_year=1000, effort_hours=10, hourly_rate_usd=120
    )
    cost = report.data["savings"]["cost"]
    assert cost["saving_rel"] == pytest.approx(0.30)
    assert cost["saving_uncertainty_rel"] == pytest.approx(0.7 * math.hypot(0.05, 0.05))
    assert cost["significant"] is True
    # $0.002 vs $0.0014 per sample; 1,000 samples a run, 1,000 runs a year
    assert cost["saving_per_run_usd"] == pytest.approx(0.60)
    assert cost["saving_per_year_usd"] == pytest.approx(600.0)
    assert cost["saving_per_year_uncertainty_usd"] == pytest.approx(
        1e6 * math.hypot(0.002 * 0.05, 0.0014 * 0.05)
    )
    first = report.sections[0].paragraphs[0]
    assert first.startswith("Yearly saving: $600 ± $120 at 1,000 runs a year ($0.600 per run)")
    assert "significant: the saving of 30 ± 5 % exceeds its uncertainty" in first
    # payback: 10 h × $120 = $1,200 ÷ $600 a year = 24 months
    assert report.data["payback"]["effort_usd"] == pytest.approx(1200.0)
    assert report.data["payback"]["months"] == pytest.approx(24.0)
    assert report.data["payback"]["uncertainty_months"] == pytest.approx(
        24.0 * cost["saving_per_year_uncertainty_usd"] / 600.0
    )
    assert "Payback of the $1,200 of engineering: 2.0 ± 0.41 years." in text(report)
    assert report.title == "Savings: cost 30 % (significant)"


def test_not_significant_saving_says_so() -> None:
    report = savings.compare(runs(10), runs(9.8), runs_per_year=100)
    energy = report.data["savings"]["energy"]
    assert energy["significant"] is False
    assert "not significant: the saving of 2 ± 7 % is within its uncertainty" in text(report)
    assert "Give effort_hours and hourly_rate_usd" in text(report)
    assert report.title.endswith("(not significant)")


def test_an_increase_is_significant_the_other_way_and_never_pays_back() -> None:
    report = savings.compare(
        runs(10), runs(12, rel=0.02), runs_per_year=10, effort_hours=1, hourly_rate_usd=100
    )
    assert "significant: an increase of 20 ± 6 %" in text(report)
    assert report.data["payback"]["months"] is None
    assert "Payback: never" in text(report)
    assert report.data["equivalences"] == []  # nothing saved, nothing to compare with


def test_spread_between_runs_beats_measurement_uncertainty() -> None:
    report = savings.compare(runs(8, 12), runs(5, 5))
    energy = report.data["savings"]["energy"]
    # baseline mean 10 kWh, sample sd 2√2, standard error 2 kWh = 20 % > 5 % stated
    assert energy["baseline_uncertainty_j"] == pytest.approx(0.2 * 10 * J_PER_KWH / 1000)
    assert energy["optimized_uncertainty_j"] == pytest.approx(0.05 * 5 * J_PER_KWH / 1000)
    assert energy["saving_uncertainty_rel"] == pytest.approx(0.5 * math.hypot(0.2, 0.05))


def test_per_year_scaling_uses_work_per_run() -> None:
    base = runs(10, tags={"samples": "1000"}) + runs(30, tags={"samples": "3000"})
    new = runs(7, tags={"samples": "1000"})
    report = savings.compare(base, new, runs_per_year=12)
    energy = report.data["savings"]["energy"]
    assert report.data["work_per_run"] == pytest.approx(2000)  # baseline mean
    per_sample = 3 * J_PER_KWH / 1000
    assert energy["saving_j"] == pytest.approx(per_sample)
    assert energy["saving_per_run_j"] == pytest.approx(per_sample * 2000)
    assert energy["saving_per_year_j"] == pytest.approx(per_sample * 2000 * 12)
    given = savings.compare(base, new, runs_per_year=12, work_per_run=500)
    assert given.data["savings"]["energy"]["saving_per_year_j"] == pytest.approx(
        per_sample * 500 * 12
    )


def test_per_run_without_work_and_without_yearly_figures() -> None:
    report = savings.compare(runs(10, tags={}), runs(8, tags={}))
    assert report.data["unit"] is None
    assert report.data["basis"] == "per run"
    assert report.data["savings"]["energy"]["saving_j"] == pytest.approx(2 * J_PER_KWH)
    assert report.data["savings"]["energy"]["saving_per_year_j"] is None
    assert "Give runs_per_year for yearly figures" in text(report)
    assert "No run states its work, so figures are per run." in text(report)


def test_unknown_cost_is_said_and_money_left_out() -> None:
    report = savings.compare(runs(10, usd_per_kwh=None), runs(7), runs_per_year=5)
    assert "cost" not in report.data["savings"]
    assert report.data["unknown"]["cost"].startswith("run ")
    assert text(report).startswith("The cost is unknown")
    assert report.data["payback"] is None
    assert report.title.startswith("Savings: energy 30 %")


def test_units_that_differ_are_an_error_naming_the_runs() -> None:
    base = runs(10, tags={"samples": "10"}, run_id="base00000001")
    new = runs(7, tags={"tokens": "10"}, run_id="new000000001")
    with pytest.raises(ConfigError, match=r"samples: baseline base00000001.*tokens: optimized"):
        savings.compare(base, new)


def test_bad_options_and_groups() -> None:
    with pytest.raises(ConfigError, match="runs_per_year cannot be negative"):
        savings.compare(runs(10), runs(7), runs_per_year=-1)
    with pytest.raises(ConfigError, match="baseline and optimized"):
        savings.compare([], runs(7))


def test_bars_figure_with_error_bars() -> None:
    report = savings.compare(runs(10, 10), runs(7, 7))
    figure = report.sections[1].figures[0]
    assert figure.kind == "bars"
    assert [s.name for s in figure.series] == ["baseline", "optimized"]
    assert figure.series[0].x == ["energy (kWh)", "CO2eq (kg)", "cost ($)"]
    # per 1000 samples = one run: 10 kWh, 4 kg, $2
    assert figure.series[0].y == pytest.approx([10.0, 4.0, 2.0])
    assert figure.error["baseline"] == pytest.approx([0.5, 0.4, 0.1])
    assert figure.error["optimized"] == pytest.approx([0.35, 0.28, 0.07])


def test_equivalences_for_the_yearly_saving_with_citations() -> None:
    report = savings.compare(runs(10), runs(7), runs_per_year=1000)
    by_key = {e["unit"]: e for e in report.data["equivalences"]}
    cars = by_key["passenger car-years (gasoline, driven for one year)"]
    # 1.2 g CO2eq per sample × 1e6 samples a year = 1.2 t
    assert cars["value"] == pytest.approx(1.2 / 4.29)
    assert "epa.gov" in cars["source"]
    section = next(s for s in report.sections if s.heading == "In everyday terms")
    assert "epa.gov" in (section.tables[0].note or "")


def test_build_picks_groups_by_id_prefix() -> None:
    base = runs(10, run_id="aaaa00000001") + runs(10, run_id="aaaa00000002")
    new = runs(7, run_id="bbbb00000001")
    report = savings.build(base + new, baseline=["aaaa00000001", "aaaa00000002"])
    assert report.data["optimized_runs"] == ["bbbb00000001"]
    with pytest.raises(ConfigError, match="matches 2 of the runs"):
        savings.build(base + new, baseline=["aaaa"])


def test_significance_wording_on_a_small_uncertainty() -> None:
    report = savings.compare(runs(10, rel=0.001), runs(9, rel=0.001))
    saving = report.data["savings"]["energy"]
    assert saving["significant"] is True
    assert "the saving of 10.0 ± 0.1 % exceeds" in text(report)
    assert callable(significance)

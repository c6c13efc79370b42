"""Carbon Impact Statement: the paragraph's numbers, unknown carbon, equivalences, figures."""

from __future__ import annotations

import json

import pytest

from greenml.measure.measurement import Sample
from greenml.report import statement
from greenml.report.markdown import render_json, render_markdown
from greenml.report.runset import load_runs
from greenml.store.repository import Store
from tests.report.builders import H100, KWH, T0, db_url, make_run, store

__all__ = ["db_url", "store"]


def test_paragraph_has_every_number(store: Store) -> None:
    run = make_run(store)  # 2 A100 × 0.9 kWh (counter) + CPU 0.2 kWh (model), PUE 1.1, 400 g/kWh
    report = statement.build(load_runs(store, [run]))
    text = report.data["paragraph"]
    assert report.sections[0].paragraphs == [text]
    for expected in (
        "2.0 kWh (±5.4 %) of electricity at the devices",  # ±5.4 %: 2 s.f.
        "2.2 kWh including data-centre overhead",
        "PUE 1.10 (given by the user)",
        "880 g CO2eq (±26 %)",
        "400 g CO2eq/kWh",
        "Electricity Maps yearly mean, zone DE, 2023 (average, lifecycle)",
        "1.0 h of wall-clock time",
        "2.0 A100 SXM4 80GB device-hours",
        "A100 SXM4 80GB (up to 2 per run)",
        "Intel(R) Xeon(R) Platinum 8480+",
        "greenml 0.1.0",
        "90 % read from hardware energy counters, 10 % estimated by a model",
        "smartphone charges",
    ):
        assert expected in text, expected
    assert "at least" not in text


def test_unknown_carbon_is_said_not_zeroed(store: Store) -> None:
    a = make_run(store)
    b = make_run(store, start=T0 + 3600, carbon="unknown", name="restart")
    report = statement.build(load_runs(store, [a, b]))
    text = report.data["paragraph"]
    assert "at least 880 g CO2eq" in text
    assert "known for 1 of 2 runs" in text
    assert "not counted as zero" in text
    assert b in text
    assert report.data["co2eq_kg"] == pytest.approx(0.88)
    assert report.data["carbon_known_runs"] == 1
    figures = report.sections[1].tables[0]
    co2_row = next(r for r in figures.rows if r[0] == "CO2eq")
    assert co2_row[3] == "known for 1 of 2 runs"


def test_no_carbon_anywhere(store: Store) -> None:
    run = make_run(store, carbon="unknown", price=None)
    report = statement.build(load_runs(store, [run]))
    assert "carbon emissions are unknown" in report.data["paragraph"]
    assert report.data["co2eq_kg"] is None
    kinds = {e["basis"] for e in report.data["equivalences"].values()}
    assert "co2" not in kinds  # nothing made from zero (2.2 kWh is below a household-year's 1 %)


def test_equivalences_cite_their_sources(store: Store) -> None:
    run = make_run(store)
    report = statement.build(load_runs(store, [run]))
    table = next(s for s in report.sections if s.heading == "Everyday equivalences").tables[0]
    labels = " ".join(row[1] for row in table.rows)
    assert "smartphone charges" in labels
    for unit in ("passenger car-years", "US household-years"):  # 2e-4 of one: left out
        assert unit not in labels
    assert all("epa.gov" in row[3] or "eia.gov" in row[3] for row in table.rows)
    phones = report.data["equivalences"]["smartphone_charges"]["value"]
    assert phones == pytest.approx(880 / 12.4)


def test_single_run_power_over_time_sums_devices(store: Store) -> None:
    samples = []
    for i in range(5):
        t = T0 + 10 * i
        samples += [
            Sample("gpu0", "gpu", t, 300.0),
            Sample("gpu1", "gpu", t + 0.01, 200.0),  # read a moment later in the same sweep
            Sample("cpu0", "cpu", t, 50.0),
        ]
    run = make_run(store, samples=samples)
    report = statement.build(load_runs(store, [run]))
    figures = next(s for s in report.sections if s.heading == "Energy breakdown").figures
    pie, line = figures
    assert pie.kind == "pie" and pie.series[0].x == ["gpu", "cpu"]
    assert pie.series[0].y == pytest.approx([1.8, 0.2])
    assert line.kind == "line"
    gpu = next(s for s in line.series if s.name == "gpu")
    assert gpu.y[0] == pytest.approx(500.0)  # both GPUs summed
    assert max(gpu.y) == pytest.approx(500.0)
    assert next(s for s in line.series if s.name == "cpu").y == pytest.approx([50.0] * 5)
    md = render_markdown(report)  # a line figure becomes one line; a pie, a small table
    assert "*Figure: Power over time, by component \\[W\\]* — gpu: 10 points over 40 s" in md
    assert "| component | energy |\n|---|---|\n| gpu | 1.80 ± 0.090 |" in md


def gpu_samples(start: float, watts: float) -> list[Sample]:
    return [Sample("gpu0", "gpu", start + 10 * i, watts) for i in range(5)]


def test_several_runs_get_bars_per_run(store: Store) -> None:
    a = make_run(store, name="lr=1e-3", samples=gpu_samples(T0, 300.0))
    b = make_run(
        store,
        devices=[("gpu", "gpu0", H100, 1.0 * KWH, "power-integrated", 0.1)],
        start=T0 + 3600,
        name="lr=1e-4",
        samples=gpu_samples(T0 + 3600, 250.0),
    )
    report = statement.build(load_runs(store, [a, b]))
    figures = next(s for s in report.sections if s.heading == "Energy breakdown").figures
    bars = figures[1]
    assert bars.kind == "stacked-bars"
    gpu = next(s for s in bars.series if s.name == "gpu")
    assert gpu.x == [f"lr=1e-3 ({a[:8]})", f"lr=1e-4 ({b[:8]})"]
    assert gpu.y == pytest.approx([1.8, 1.0])
    assert bars.error["gpu"] == pytest.approx([0.09, 0.1])
    power = figures[2]  # several runs keep the power chart: one line per run, on its own clock
    assert power.kind == "line" and power.title == "Power over time, per run"
    assert [s.name for s in power.series] == [f"lr=1e-3 ({a[:8]})", f"lr=1e-4 ({b[:8]})"]
    assert [(s.x[0], s.x[-1], s.y[0]) for s in power.series] == [(0.0, 40.0, 300.0),
                                                                 (0.0, 40.0, 250.0)]
    assert power.x_label == "time since the run's start (s)" and power.y_label == "W"


def test_several_runs_keep_the_intensity_chart_and_say_which_runs_are_drawn(
    store: Store,
) -> None:
    from greenml.report.run_figures import MAX_RUNS_DRAWN

    hourly = {"g_per_kwh": 300.0, "intensity_series": [[T0, 280.0], [T0 + 1800, 320.0]]}
    ids = [make_run(store, name=f"r{i}", start=T0 + 7200 * i, carbon=dict(hourly),
                    samples=gpu_samples(T0 + 7200 * i, 100.0 + i))
           for i in range(MAX_RUNS_DRAWN + 2)]  # fmt: skip
    report = statement.build(load_runs(store, ids))
    figs = next(s for s in report.sections if s.heading == "Energy breakdown").figures
    titles = [f.title for f in figs]
    assert any(t.startswith("Power over time, per run (the 8 runs") for t in titles), titles
    intensity = next(f for f in figs if f.title.startswith("Carbon intensity over each run"))
    assert len(intensity.series) == MAX_RUNS_DRAWN and intensity.series[0].y == [280.0, 320.0]


def test_renders_as_markdown_and_json(store: Store) -> None:
    run = make_run(store, name="bert | *base* <b>")
    report = statement.build(load_runs(store, [run]))
    md = render_markdown(report)
    assert md.startswith("# Carbon Impact Statement\n")
    assert "## Statement" in md and "| quantity | value | uncertainty | note |" in md
    assert "bert \\| \\*base\\* \\<b\\>" in md  # Markdown and | escaped: shown as typed
    data = json.loads(render_json(report))
    assert data["kind"] == "statement"
    assert data["runs"] == [run]
    for key in ("it_energy_kwh", "facility_energy_kwh", "co2eq_kg", "co2eq_uncertainty_kg",
                "device_hours", "method_shares", "intensity_sources", "pues", "tool",
                "equivalences", "paragraph"):  # fmt: skip
        assert key in data["data"], key
    assert data["data"]["it_energy_kwh"] == pytest.approx(2.0)


def test_a_run_with_hourly_intensity_gets_its_intensity_plotted() -> None:
    from greenml.report.figures import intensity_over_run

    record = {
        "carbon": {"source": "trace.csv", "intensity_series": [[0.0, 300.0], [3600.0, 340.0]]}
    }
    figure = intensity_over_run(record)
    assert figure is not None and figure.kind == "line"
    assert figure.series[0].y == [300.0, 340.0]
    assert figure.y_label == "g CO2eq/kWh"
    assert intensity_over_run({"carbon": {"kg": 1.0}}) is None  # a constant: nothing to plot


@pytest.mark.parametrize(("joules", "unit", "shown"), [(8.8, "J", 8.8), (14_200.0, "kJ", 14.2),
                                                       (5 * KWH, "kWh", 5.0)])  # fmt: skip
def test_energy_charts_use_one_unit_that_fits_their_size(
    store: Store, joules: float, unit: str, shown: float
) -> None:
    cpu = [("cpu", "cpu0", "CPU (model)", joules, "estimated", 0.5)]
    a = make_run(store, devices=cpu, name="a")
    b = make_run(store, devices=cpu, name="b", start=T0 + 7200)
    figs = next(s for s in statement.build(load_runs(store, [a, b])).sections
                if s.heading == "Energy breakdown").figures  # fmt: skip
    pie, bars = figs[0], figs[1]
    assert pie.y_label == unit and bars.y_label == unit
    assert bars.series[0].y == pytest.approx([shown, shown])
    assert pie.series[0].y == pytest.approx([2 * shown])


@pytest.mark.parametrize(
    ("kg", "shown"),
    [(2.43e-6, "2.43 mg CO2eq"), (5.1e-10, "0.510 µg CO2eq"), (0.5, "500 g CO2eq"),
     (1234.0, "1.23 t CO2eq")],
)  # fmt: skip
def test_report_co2_reads_in_the_unit_that_fits(kg: float, shown: str) -> None:
    from greenml.report import sigfig

    assert sigfig.co2(kg, 3) == shown


def test_statement_shows_market_embodied_and_water_apart() -> None:
    from greenml.report.runset import RunSet
    from tests.run_records import record as hand_record

    record = hand_record(18e6, ci_g_per_kwh=400.0)  # 5 kWh × 400 g = 2 kg
    record["carbon_market"] = {"status": "ok", "kg": 0.5, "uncertainty_rel": 0.1,
                               "offsets_kg": 3.0}  # fmt: skip
    record["embodied"] = {"status": "ok", "kg": 0.25, "uncertainty_rel": 0.5}
    record["water"] = {"status": "ok", "litres": 12.0, "uncertainty_rel": 0.4}
    record["flops"] = {"status": "ok", "method": "counted", "flops": 1.0e18}
    runs = RunSet([record])
    assert runs.carbon.value == pytest.approx(2.0)  # the location-based total is untouched
    report = statement.build(runs)
    rows = {r[0]: r for r in report.sections[1].tables[0].rows}
    assert rows["CO2eq, market-based (scope 2)"][1] != "unknown"
    assert rows["Offsets held"][3] == "listed apart, never subtracted"
    assert "market-based" in report.data["paragraph"] and "L of water" in report.data["paragraph"]
    assert report.data["co2eq_market_kg"] == pytest.approx(0.5)
    assert report.data["water_l"] == pytest.approx(12.0)
    assert rows["Work done (FLOPs)"][3] == "counted in 1 run"
    assert "FLOPs per kWh (IT)" in rows and report.data["flops"] == 1.0e18
    older = RunSet([hand_record(3.6e6)])  # no such blocks: unknown, not zero
    assert older.to_dict()["co2eq_market_kg"] is None

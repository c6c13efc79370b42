"""EU AI Act Annex XI 2(d)-(e): MWh to two significant figures, restarts aggregated, FLOPs."""

from __future__ import annotations

import json

import pytest

from greenml.errors import ConfigError
from greenml.report import euaiact
from greenml.report.markdown import render_json, render_markdown
from greenml.report.runset import load_runs
from greenml.store.repository import Store
from tests.report.builders import KWH, T0, a100_devices, db_url, make_run, store

__all__ = ["db_url", "store"]

MWH = 1000 * KWH


@pytest.mark.parametrize(
    ("mwh", "rel", "text"),
    [
        (0.0031, None, "0.0031 MWh"),
        (0.00314159, None, "0.0031 MWh"),
        (0.0999, None, "0.10 MWh"),  # rounding up keeps two figures, not three
        (0.5, None, "0.50 MWh"),
        (9.96, None, "10 MWh"),
        (12, None, "12 MWh"),
        (12, 0.01, "12.0 MWh"),  # known to ±1 %: three figures
        (1234.5, None, "1,235 MWh"),  # integer digits are never rounded away
        (2.5e-10, None, "2.5e-10 MWh"),
    ],
)
def test_mwh_has_at_least_two_significant_figures(mwh: float, rel: float | None, text: str) -> None:
    assert euaiact.mwh_text(mwh * MWH, rel) == text


def big_run(store: Store, start: float, status: str, **kw: object) -> str:
    """8 A100s × 500 kWh (counters) + CPU 100 kWh (model): 4.1 MWh IT, 4.51 MWh at PUE 1.1."""
    devices = a100_devices(gpus=8, gpu_kwh=500, cpu_kwh=100)
    return make_run(store, devices=devices, start=start, status=status, **kw)  # type: ignore[arg-type]


def test_restarts_and_failed_runs_are_aggregated_and_listed(store: Store) -> None:
    tags = {"model": "llm-7b", "flops": "1e23"}
    failed = big_run(store, T0, "failed", tags=tags, name="pretrain")
    broken = big_run(store, T0 + 4000, "incomplete", tags=tags, name="pretrain-restart-1")
    done = big_run(
        store, T0 + 8000, "completed", tags={"model": "llm-7b"}, name="pretrain-restart-2"
    )
    report = euaiact.build(
        load_runs(store, tag={"model": "llm-7b"}), model="llm-7b", provider="ACME"
    )
    data = report.data
    assert data["energy_mwh"] == pytest.approx(3 * 4.51)
    assert data["it_energy_mwh"] == pytest.approx(3 * 4.1)
    assert data["statuses"] == {"failed": 1, "incomplete": 1, "completed": 1}
    assert data["devices"] == [
        {"type": "A100 SXM4 80GB", "max_per_run": 8, "device_hours": pytest.approx(24.0)}
    ]
    assert data["training_time_hours"] == pytest.approx((8000 + 3600) / 3600)
    assert data["run_hours"] == pytest.approx(3.0)
    energy = next(s for s in report.sections if s.heading.startswith("2(e)"))
    # ±4.9 % (counters dominate): three significant figures
    assert (
        "Energy consumption of training: 13.5 MWh (±4.9 %), partly measured"
        in (energy.paragraphs[0])
    )
    runs_section = next(s for s in report.sections if s.heading == "Runs included")
    assert [row[0] for row in runs_section.tables[0].rows] == [failed, broken, done]
    assert "1 failed, 1 incomplete, 1 completed" in runs_section.paragraphs[0]
    scope = report.sections[0].paragraphs[0]
    assert "llm-7b, provided by ACME" in scope and "3 runs" in scope
    # FLOPs from the tags of two of the three runs: said
    assert data["flops"] == pytest.approx(2e23)
    assert data["flops_source"] == "sum of the runs' flops tags; known for 2 of 3 runs"


def test_flops_option_and_bad_tag(store: Store) -> None:
    run = big_run(store, T0, "completed", tags={"flops": "lots"})
    runs = load_runs(store, [run])
    report = euaiact.build(runs, flops=3.14e23)
    assert report.data["flops"] == 3.14e23
    assert "3.1 × 10^23" in render_markdown(report)
    with pytest.raises(ConfigError, match="flops='lots' is not a number"):
        euaiact.build(runs)
    with pytest.raises(ConfigError, match="--flops must be"):
        euaiact.build(runs, flops=-1.0)


def test_unknown_energy_is_said_and_estimates_labelled(store: Store) -> None:
    measured = big_run(store, T0, "completed", tags={"m": "x"})
    lost = make_run(store, start=T0 + 4000, tags={"m": "x"}, finish=False, status="running")
    runs = load_runs(store, tag={"m": "x"})
    plain = euaiact.build(runs)
    text = next(s for s in plain.sections if s.heading.startswith("2(e)")).paragraphs[0]
    assert f"Energy is unknown for 1 run(s) ({lost})" in text
    assert "not counted as zero" in text
    assert plain.data["energy_mwh"] == pytest.approx(4.51)
    assert plain.data["energy_unknown"][0]["run_id"] == lost
    with_estimate = euaiact.build(runs, estimated_mwh=2.5)
    text = next(s for s in with_estimate.sections if s.heading.startswith("2(e)")).paragraphs[0]
    assert "2.5 MWh estimated by the provider is added for them" in text
    assert with_estimate.data["energy_mwh"] == pytest.approx(4.51 + 2.5)
    assert with_estimate.data["estimated_mwh"] == 2.5
    table = next(s for s in with_estimate.sections if s.heading.startswith("2(e)")).tables[0]
    assert ["Energy, estimated parts", "2.5 MWh", "estimated (given with --estimated-mwh)"] in (
        table.rows
    )
    assert measured in with_estimate.runs


def test_method_and_delegated_act_note(store: Store) -> None:
    counters = [("gpu", "gpu0", "NVIDIA H100 80GB HBM3", 10 * KWH, "counter", 0.05)]
    run = make_run(store, devices=counters)
    report = euaiact.build(load_runs(store, [run]))
    assert report.data["energy_basis"] == "measured"
    method = next(s for s in report.sections if s.heading == "Methodology")
    assert any("Article 53(5)" in p and "not yet adopted" in p for p in method.paragraphs)
    assert method.tables[0].rows[0][:2] == ["gpu", "counter"]
    data = json.loads(render_json(report))["data"]
    for key in ("energy_mwh", "it_energy_mwh", "energy_basis", "flops", "devices",
                "training_time_hours", "delegated_act_note", "statuses"):  # fmt: skip
        assert key in data, key
    cpu_only = make_run(store, devices=[("cpu", "cpu0", "Xeon", KWH, "estimated", 0.3)])
    assert euaiact.build(load_runs(store, [cpu_only])).data["energy_basis"] == "estimated"


def test_counted_flops_fill_the_training_compute_labelled() -> None:
    from greenml.report.runset import RunSet
    from tests.run_records import record as hand_record

    counted = hand_record(3.6e9, tags={"flops": "9e99"})  # the counted figure wins over a tag
    counted["flops"] = {"status": "ok", "method": "counted", "flops": 4.0e21}
    tagged = hand_record(3.6e9, tags={"flops": "1e21"})
    data = euaiact.build(RunSet([counted, tagged])).data
    assert data["flops"] == pytest.approx(5.0e21)
    assert data["flops_counted_runs"] == 1 and data["flops_given_runs"] == 1
    assert "counted in 1 run (PyTorch FlopCounterMode" in data["flops_source"]
    assert "given by flops tags on 1 run" in data["flops_source"]

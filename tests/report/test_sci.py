"""SCI = (E·I + M) per R, checked against a hand-computed example; functional units; M sources."""

from __future__ import annotations

import math

import pytest

from greenml.errors import ConfigError
from greenml.hardware.embodied import embodied_for_gpu, embodied_items
from greenml.report import sci
from greenml.report.runset import load_runs
from greenml.store.repository import Store
from tests.report.builders import H100, KWH, T0, db_url, make_run, store

__all__ = ["db_url", "store"]


def test_hand_computed_example(store: Store) -> None:
    # 2 × A100 SXM4 80GB for 1 h: 2 × 0.9 kWh + CPU 0.2 kWh = 2.0 kWh IT, PUE 1.1 → E = 2.2 kWh
    # I = 400 g/kWh                                  → O = 2.2 × 400         = 880 g
    # M, GPUs: 150 kg × (2 GPU-h / 35,040 h) × 1/1   = 8.5616 g
    # M, host: 2,500 kg × (2 GPU-h / 35,040 h) × 1/8 = 17.8368 g
    # R = 250,000 inferences / 1000                  = 250
    # SCI = (880 + 8.5616 + 17.8368) / 250           = 3.62559 g per 1000 inferences
    run = make_run(store)
    report = sci.build(load_runs(store, [run]), per="1000 inferences", units=250_000)
    data = report.data
    assert data["e_kwh"] == pytest.approx(2.2)
    assert data["i_g_per_kwh"] == pytest.approx(400)
    assert data["i_kinds"] == ["average"]
    assert data["o_g"] == pytest.approx(880)
    terms = {t["item"]: t for t in data["embodied_terms"]}
    gpu = terms["NVIDIA A100 GPU"]
    host = terms["HPE Apollo 6500 Gen10 Plus node (GPUs excluded)"]
    assert (gpu["te_kg"], gpu["tir_h"], gpu["el_h"], gpu["rr"], gpu["tor"]) == (
        150,
        pytest.approx(2.0),
        35_040,
        1,
        1,
    )
    assert gpu["m_g"] == pytest.approx(8.5616, rel=1e-4)
    assert (host["te_kg"], host["tor"]) == (2500, 8)
    assert host["m_g"] == pytest.approx(17.8368, rel=1e-4)
    assert data["m_g"] == pytest.approx(26.3984, rel=1e-4)
    assert data["r"] == pytest.approx(250)
    assert data["sci_g_per_unit"] == pytest.approx(3.62559, rel=1e-4)
    assert data["complete"] is True
    score = report.sections[0].paragraphs[0]
    assert "(880 g CO2eq + 26.4 g CO2eq) / 250 = 3.63 g CO2eq per 1000 inferences" in score
    sources = " ".join(row[2] for row in report.sections[1].tables[0].rows)
    assert "location-based, average intensity" in sources
    assert "EL = 4 years" in sources and "Cloud Carbon Footprint" in sources


def test_lifetime_and_user_embodied_figure(store: Store) -> None:
    run = make_run(store)
    runs = load_runs(store, [run])
    longer = sci.build(runs, per="training run", lifetime_years=8)
    assert longer.data["m_g"] == pytest.approx(26.3984 / 2, rel=1e-4)
    assert longer.data["r"] == 1
    assert longer.data["lifetime_source"] == "given by the user (--lifetime-years)"
    mine = sci.build(runs, per="training run", embodied_kg=438)  # per GPU, host share included
    (term,) = mine.data["embodied_terms"]
    assert term["source"] == "given by the user (--embodied-kg)"
    assert term["m_g"] == pytest.approx(438e3 * 2 / 35_040)


def test_gpu_without_cited_figure_is_operational_only(store: Store) -> None:
    run = make_run(store, devices=[("gpu", "gpu0", H100, 1.0 * KWH, "counter", 0.05)])
    report = sci.build(load_runs(store, [run]), per="token", units=1.5e9)
    data = report.data
    assert data["m_g"] is None
    assert data["embodied_missing"] == ["no cited embodied figure for H100 SXM: pass --embodied-kg"]
    assert data["complete"] is False
    assert data["sci_g_per_unit"] == pytest.approx(1.0 * 1.1 * 400 / 1.5e9)
    assert "SCI, operational part (M unknown) = O / R" in report.sections[0].paragraphs[0]


def test_missing_carbon_makes_o_a_lower_bound(store: Store) -> None:
    a = make_run(store)
    b = make_run(store, start=T0 + 3600, carbon="unknown")
    report = sci.build(load_runs(store, [a, b]), per="run")
    assert report.data["r"] == 2  # per run: R is the number of runs
    assert report.data["o_g"] == pytest.approx(880)
    assert report.data["complete"] is False
    assert "O is a lower bound: carbon is known for 1 of 2 runs" in report.sections[0].paragraphs[0]


def test_cpu_only_needs_a_figure(store: Store) -> None:
    run = make_run(store, devices=[("cpu", "cpu0", "Xeon", KWH, "estimated", 0.3)])
    runs = load_runs(store, [run])
    assert sci.build(runs, per="job").data["m_g"] is None
    machine = sci.build(runs, per="job", embodied_kg=1000)
    (term,) = machine.data["embodied_terms"]
    assert term["item"] == "the machine" and term["tir_h"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("per", "units", "runs", "count", "unit"),
    [
        ("1000 inferences", 250_000, 1, 250, "inferences"),
        ("token", 1.5e9, 1, 1.5e9, "token"),
        ("1e3 tokens", 5e6, 1, 5e3, "tokens"),
        ("1,000 queries", 2000, 1, 2, "queries"),
        ("run", None, 7, 7, "run"),
        ("training run", None, 3, 1, "training run"),
    ],
)
def test_functional_units(
    per: str, units: float | None, runs: int, count: float, unit: str
) -> None:
    r = sci.functional_unit(per, units, runs)
    assert r.count == pytest.approx(count)
    assert r.unit == unit


@pytest.mark.parametrize(
    ("per", "units", "message"),
    [
        ("token", None, "needs --units: how many token"),
        ("", 10, "must name a functional unit"),
        ("token", 0, "--units must be a positive number"),
        ("token", -5, "--units must be a positive number"),
        ("token", math.nan, "--units must be a positive number"),
        ("token", math.inf, "--units must be a positive number"),
    ],
)
def test_bad_functional_units(per: str, units: float | None, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        sci.functional_unit(per, units, 1)


def test_bad_lifetime_and_embodied(store: Store) -> None:
    runs = load_runs(store, [make_run(store)])
    with pytest.raises(ConfigError, match="--lifetime-years"):
        sci.build(runs, lifetime_years=0)
    with pytest.raises(ConfigError, match="--embodied-kg"):
        sci.build(runs, embodied_kg=-3)


def test_embodied_table_is_cited() -> None:
    items = embodied_items()
    assert items and all("BLOOM" in i.source and i.kg > 0 for i in items)
    gpu, host = embodied_for_gpu("NVIDIA A100-SXM4-40GB")
    assert gpu is not None and gpu.kg == 150
    assert host is not None and host.gpus_per_host == 8
    gpu, host = embodied_for_gpu("NVIDIA A100 80GB PCIe")
    assert gpu is not None and host is None  # the Apollo node hosts SXM4 boards only
    assert embodied_for_gpu("NVIDIA H100 80GB HBM3") == (None, None)
    assert embodied_for_gpu("Some Unknown Accelerator") == (None, None)

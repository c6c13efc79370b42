"""Embodied carbon per run: one implementation for the record, the estimate and the SCI."""

from __future__ import annotations

import pytest

from greenml.hardware.embodied import HOURS_PER_YEAR, amortize, embodied_block


def test_cited_model_gpu_and_its_host_share() -> None:
    b = embodied_block([("NVIDIA A100-SXM4-80GB", 10.0)], lifetime_years=4.0)
    life_h = 4 * HOURS_PER_YEAR
    assert b["kg"] == pytest.approx(150 * 10 / life_h + 2500 / 8 * 10 / life_h)
    assert b["basis"] == "model" and b["status"] == "ok"
    assert {t["basis"] for t in b["terms"]} == {"model"}


def test_gpu_without_figure_gets_the_labelled_class_figure() -> None:
    b = embodied_block([("NVIDIA H100 80GB HBM3", 35.04)], lifetime_years=4.0)
    assert b["basis"] == "class" and b["kg"] == pytest.approx(150 * 35.04 / 35040)
    assert "class estimate" in b["terms"][0]["source"] and b["uncertainty_rel"] == 1.0
    assert any("host server" in m for m in b["missing"])


def test_sci_uses_cited_figures_only() -> None:
    terms, missing = amortize([("NVIDIA H100 80GB HBM3", 1.0)])
    assert terms == [] and "no cited embodied figure" in missing[0]


def test_cpu_only_and_given_figure() -> None:
    assert embodied_block([], machine_hours=1.0)["kg"] is None
    given = embodied_block([], embodied_kg=1000.0, machine_hours=HOURS_PER_YEAR, lifetime_years=1)
    assert given["kg"] == pytest.approx(1000.0) and given["basis"] == "given"

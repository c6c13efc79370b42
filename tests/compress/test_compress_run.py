"""One compress run of every technique on a tiny trained MLP, checked from several sides."""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from greenml.compress import CompressionResult, compress
from greenml.compress.plot import write_pareto_svg
from tests.compress.conftest import FAKE_POWER_W, FAST, fake_meter, make_task

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def run() -> tuple[CompressionResult, Any, dict[str, Any]]:
    """(result, the task, the model's weights before the run)."""
    task = make_task()
    task.model.train()  # compress must put it in eval mode, and restore this
    before = copy.deepcopy(task.model.state_dict())
    meter = fake_meter()
    try:
        result = compress(task.model, task.evaluate, task.example_inputs,
                          train_data=task.train_data, meter=meter, repeats=3,
                          options=FAST)  # fmt: skip
    finally:
        meter.close()
    return result, task, before


def test_every_technique_has_a_row_with_a_status(run: Any) -> None:
    result, _, _ = run
    names = [v.name for v in result.variants]
    assert names == ["baseline", "int8", "bf16", "fp16", "prune", "sparse24", "distill", "onnx",
                     "onnx-int8"]  # fmt: skip
    assert result.variant("sparse24").status == "skipped"
    for v in result.variants:
        if v.name != "sparse24":
            assert v.status == "ok", (v.name, v.reason)


def test_sparse24_is_skipped_on_cpu_with_the_reason(run: Any) -> None:
    reason = run[0].variant("sparse24").reason
    assert "compute capability 8.0" in reason and "cpu" in reason


def test_int8_weights_are_smaller_and_accuracy_holds(run: Any) -> None:
    result, _, _ = run
    base, int8 = result.baseline, result.variant("int8")
    assert int8.size_bytes is not None and base.size_bytes is not None
    assert int8.size_bytes < 0.5 * base.size_bytes  # int8 weights: about a quarter
    assert int8.accuracy_pct is not None and base.accuracy_pct is not None
    assert base.accuracy_pct > 90
    assert abs(int8.accuracy_pct - base.accuracy_pct) <= 2.0


def test_bf16_halves_the_weights(run: Any) -> None:
    result, _, _ = run
    bf16 = result.variant("bf16")
    assert bf16.size_bytes is not None and result.baseline.size_bytes is not None
    assert bf16.size_bytes < 0.6 * result.baseline.size_bytes  # 2 bytes, not 4, + pickle framing


def test_pruning_removes_parameters_and_the_model_still_runs(run: Any) -> None:
    result, _, _ = run
    prune = result.variant("prune")
    assert prune.params is not None and result.baseline.params is not None
    assert prune.params < 0.5 * result.baseline.params  # 64→32 hidden: ~3.5× fewer
    assert prune.size_bytes is not None and prune.size_bytes < result.baseline.size_bytes
    assert prune.accuracy_pct is not None and prune.accuracy_pct > 50
    assert prune.latency_p50_s is not None
    assert any("fine-tuned" in n for n in prune.notes)


def test_distilled_student_is_smaller(run: Any) -> None:
    result, _, _ = run
    student = result.variant("distill")
    assert student.params is not None and result.baseline.params is not None
    assert student.params < result.baseline.params
    assert student.accuracy_pct is not None


def test_onnx_matches_the_baseline_and_its_int8_is_smaller(run: Any) -> None:
    result, _, _ = run
    onnx, onnx8 = result.variant("onnx"), result.variant("onnx-int8")
    assert onnx.accuracy_pct == pytest.approx(result.baseline.accuracy_pct)
    assert onnx.size_source == "ONNX file"
    assert onnx8.size_bytes is not None and onnx.size_bytes is not None
    assert onnx8.size_bytes < onnx.size_bytes


def test_energy_is_the_fake_power_over_the_throughput(run: Any) -> None:
    """40 W constant, read as a counter: joules per item = 40 / (items per second)."""
    result, _, _ = run
    for v in result.variants:
        if not v.ok:
            continue
        assert v.energy_method == "counter"
        assert v.energy_uncertainty_rel == pytest.approx(0.02)
        assert v.throughput_items_per_s is not None and v.energy_per_1k_j is not None
        expected = 1000 * FAKE_POWER_W / v.throughput_items_per_s
        assert v.energy_per_1k_j == pytest.approx(expected, rel=1e-9)
        assert v.latency_p50_s is not None and v.latency_p99_s is not None
        assert 0 < v.latency_p50_s <= v.latency_p99_s
        assert v.calls >= 2 * 3 and v.batch_size == 32
        assert v.energy_spread_rel is not None  # two rounds


def test_recommendation_is_within_the_budget_and_lowest_energy(run: Any) -> None:
    result, _, _ = run
    rec = result.recommendation
    assert rec.variant is not None
    chosen = result.variant(rec.variant)
    assert chosen.accuracy_drop_pp is not None and chosen.accuracy_drop_pp <= 1.0
    within = [v for v in result.variants if v.ok and (v.accuracy_drop_pp or 0) <= 1.0]
    assert chosen.energy_per_1k_j == min(v.energy_per_1k_j or 0 for v in within)
    assert chosen.pareto


def test_users_model_is_unchanged_and_back_in_its_mode(run: Any) -> None:
    _, task, before = run
    assert task.model.training
    after = task.model.state_dict()
    assert all((before[k] == after[k]).all() for k in before)


def test_json_round_trips(run: Any) -> None:
    data = json.loads(json.dumps(run[0].to_dict()))
    assert data["recommendation"]["variant"] == run[0].recommendation.variant
    assert len(data["variants"]) == 9
    assert data["variants"][0]["energy_method"] == "counter"


def test_svg_is_well_formed_with_one_point_per_measured_variant(run: Any, tmp_path: Path) -> None:
    result, _, _ = run
    path = write_pareto_svg(result, tmp_path / "pareto.svg")
    root = ET.parse(path).getroot()
    assert root.tag == f"{SVG}svg"
    points = [c for c in root.iter(f"{SVG}circle") if c.get("class") == "point"]
    measured = [v.name for v in result.variants if v.ok and v.energy_per_1k_j is not None]
    assert sorted(p.get("data-variant") for p in points) == sorted(measured)
    rings = [c for c in root.iter(f"{SVG}circle") if c.get("class") == "recommended"]
    assert len(rings) == 1
    assert any(e.get("class") == "budget" for e in root.iter(f"{SVG}line"))

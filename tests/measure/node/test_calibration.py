"""The node-overhead fit: recovers a known overhead, states its held-out error, keeps per host."""

from __future__ import annotations

import json
import random
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from greenml.errors import ConfigError
from greenml.measure.measurement import ComponentEnergy, DeviceEnergy, Measurement
from greenml.measure.node.balance import node_block
from greenml.measure.node.calibration import Calibration, NodeRun, fit, load, save
from greenml.measure.node.spec import parse_node_meter


def runs_of(static_w: float, factor: float, noise: float, n: int = 12) -> list[NodeRun]:
    rng = random.Random(7)
    out = []
    for i in range(n):
        duration = rng.uniform(60, 3600)
        components = duration * rng.uniform(100, 900)  # 100–900 W of GPUs and CPUs
        node = (static_w * duration + factor * components) * (1 + rng.gauss(0, noise))
        out.append(NodeRun(duration, node, components, f"r{i}"))
    return out


def test_the_fit_recovers_a_known_overhead_and_its_error() -> None:
    cal = fit(runs_of(85.0, 1.12, noise=0.01), hostname="gpu-7")
    assert cal.static_w == pytest.approx(85.0, rel=0.15)
    assert cal.factor == pytest.approx(1.12, rel=0.03)
    assert cal.held_out and cal.runs == 12
    assert 0.003 < cal.residual_rel < 0.03  # the 1 % noise, seen on held-out runs
    assert cal.label.startswith("calibrated on 12 runs, residual ±")


def test_noisier_runs_give_a_larger_stated_error() -> None:
    quiet = fit(runs_of(85.0, 1.12, noise=0.01), hostname="h")
    loud = fit(runs_of(85.0, 1.12, noise=0.08), hostname="h")
    assert loud.residual_rel > 3 * quiet.residual_rel


def test_too_few_or_alike_runs_are_refused() -> None:
    with pytest.raises(ConfigError, match="at least 2"):
        fit([NodeRun(10, 3000, 2000)])
    alike = [NodeRun(10, 3000, 2000), NodeRun(20, 6000, 4000), NodeRun(30, 9000, 6000)]
    with pytest.raises(ConfigError, match="cannot be told apart"):
        fit(alike)


def test_kept_per_host_and_used_for_a_run_without_a_meter(tmp_path: Path) -> None:
    path = tmp_path / "node-calibration.json"
    a = fit(runs_of(85.0, 1.12, 0.01), hostname="a")
    save(a, path)
    save(fit(runs_of(40.0, 1.05, 0.01), hostname="b"), path)
    assert load("a", path) == a and load("b", path) is not None and load("c", path) is None
    gpu = ComponentEnergy({"gpu0": DeviceEnergy(30000.0, "counter", 0.05, "GPU")})
    m = Measurement("run", datetime(2026, 11, 28, tzinfo=timezone.utc), 100.0, {"gpu": gpu})
    block = node_block(m, a)
    assert block is not None and block["method"] == "estimated"
    assert block["energy_j"] == pytest.approx(a.static_w * 100 + a.factor * 30000)
    assert block["uncertainty_rel"] == pytest.approx(a.residual_rel)
    assert a.label in block["notes"][0]
    assert node_block(m) is None  # no meter, no calibration: no node figure at all


def test_a_damaged_calibration_file_is_one_config_error(tmp_path: Path) -> None:
    path = tmp_path / "node-calibration.json"
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="cannot be read"):
        load("a", path)
    path.write_text(json.dumps({"a": {"static_w": 1}}))
    with pytest.raises(ConfigError, match="incomplete"):
        load("a", path)


@given(st.text(max_size=60))
def test_any_node_meter_string_is_a_source_or_one_config_error(text: str) -> None:
    try:
        source = parse_node_meter(text, Path("/nonexistent-root"))
    except ConfigError as exc:
        assert "\n" not in str(exc).strip()
        return
    source.close()


@given(st.lists(st.tuples(st.floats(1, 1e5), st.floats(1, 1e8), st.floats(0, 1e8)),
                min_size=0, max_size=8))  # fmt: skip
def test_any_set_of_runs_fits_or_is_refused_in_one_line(rows: list[tuple[float, ...]]) -> None:
    try:
        cal = fit([NodeRun(*r) for r in rows], hostname="h")
    except ConfigError as exc:
        assert "\n" not in str(exc)
        return
    assert isinstance(cal, Calibration) and cal.residual_rel >= 0


def test_the_cpu_models_scale_is_recovered_where_model_and_meters_vary_apart() -> None:
    rng = random.Random(3)
    runs = []
    for _ in range(10):
        d = rng.uniform(60, 3600)
        gpu_j, cpu_model_j = d * rng.uniform(100, 700), d * rng.uniform(20, 120)
        # the node sees the CPU at 1.4 × what the model said, all through a PSU factor 1.1
        node = (60 * d + 1.1 * (gpu_j + 1.4 * cpu_model_j)) * (1 + rng.gauss(0, 0.005))
        runs.append(NodeRun(d, node, gpu_j + cpu_model_j, modelled_j=cpu_model_j))
    cal = fit(runs, hostname="h")
    assert cal.cpu_model_scale == pytest.approx(1.4, rel=0.1)
    assert cal.cpu_model_error_rel is not None and cal.cpu_model_error_rel < 0.02
    measured_only = fit([NodeRun(r.duration_s, r.node_j, r.components_j) for r in runs], "h")
    assert measured_only.cpu_model_scale is None and "CPU model" in measured_only.cpu_model_note

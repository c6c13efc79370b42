"""``--cap-when-dirty``: a lower GPU limit while the grid is dirty, on the fake NVML's V100s.

The fake V100 runs ImageNet/ResNet-50 as measured in the Zeus traces: its power
and step time follow the power limit in force, and its energy counter
integrates that power over the history of limits. An hourly intensity trace
is clean, dirty for two hours, then clean again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from greenml.accounting.traces import load_trace
from greenml.errors import ConfigError
from greenml.optimize.dirty_cap import CapCurve, DirtyCapController
from greenml.optimize.dirty_cap_run import intensity_reader
from greenml.optimize.gpu_control import GpuControl
from greenml.optimize.objective import LimitProfile
from greenml.record.run_record import RunRecord
from tests.fakes.fake_pynvml import FakeClock, FakeNvml
from tests.optimize.fake_gpus import v100_curve, v100s

REPO = Path(__file__).resolve().parents[2]
HOUR = 3600.0
START = datetime(2024, 3, 1, tzinfo=timezone.utc).timestamp()


def _curve() -> CapCurve:
    rows = v100_curve("imagenet")
    return CapCurve(tuple(LimitProfile(w, t, p * t) for w, p, t in rows), "V100 ImageNet (Zeus)")


def _trace(path: Path, values: list[float], start_s: float = START) -> Path:
    lines = ["time,g_per_kwh"] + [
        f"{datetime.fromtimestamp(start_s + i * HOUR, timezone.utc):%Y-%m-%dT%H:%M:%S},{v}"
        for i, v in enumerate(values)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _drive(tmp_path: Path, slack_s: float | None) -> tuple[dict[str, Any], FakeNvml, list[float]]:
    clock = FakeClock(0.0)
    nvml = FakeNvml(v100s(1), clock)
    control = GpuControl([0], nvml=nvml, state_file=tmp_path / "state.json")
    trace = load_trace(_trace(tmp_path / "ci.csv", [100, 100, 500, 500, 100, 100]))
    controller = DirtyCapController(
        limiter=control, curve=_curve(), intensity_at=intensity_reader(trace, live=False),
        dirty_above_g_per_kwh=300.0, started_s=START, slack_s=slack_s,
        intensity_source=trace.provenance.source,
    )  # fmt: skip
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    limits: list[float] = []
    for _ in range(5 * 60):  # five hours, one tick a minute
        controller.tick(START + clock(), nvml.nvmlDeviceGetTotalEnergyConsumption(handle) / 1e3)
        limits.append(nvml.nvmlDeviceGetPowerManagementLimit(handle) / 1e3)
        clock.advance(60.0)
    spent_j = nvml.nvmlDeviceGetTotalEnergyConsumption(handle) / 1e3
    block = controller.finish(START + clock(), spent_j)
    control.restore()
    return block, nvml, limits


def test_the_limit_follows_the_grid_and_the_saving_is_measured(tmp_path: Path) -> None:
    block, nvml, limits = _drive(tmp_path, slack_s=None)
    curve = _curve()
    assert curve.capped.power_limit_w < 250.0
    assert limits[:120] == [250.0] * 120  # clean hours: uncapped
    assert limits[120:240] == [curve.capped.power_limit_w] * 120  # dirty: capped
    assert limits[240:] == [250.0] * 60  # clean again: restored
    assert [c["reason"] for c in block["changes"]] == ["clean", "dirty", "clean"]
    assert block["capped_s"] == pytest.approx(2 * HOUR)
    rate = curve.uncapped.time_s / curve.capped.time_s
    assert block["time_cost_s"] == pytest.approx(2 * HOUR * (1 - rate), rel=1e-6)
    assert block["co2_saved_g"] > 2 * block["co2_saved_uncertainty_g"] > 0
    assert block["co2_g"] + block["co2_saved_g"] == pytest.approx(block["co2_uncapped_g"])
    # the original limit is back and the state file is empty
    assert nvml.nvmlDeviceGetPowerManagementLimit(nvml.nvmlDeviceGetHandleByIndex(0)) == 250_000
    state = tmp_path / "state.json"
    assert not state.exists() or "GPU-v100" not in state.read_text()
    RunRecord.from_dict({"id": "r1", "dirty_cap": block}, strict=False)


def test_the_deadline_bounds_the_time_lost(tmp_path: Path) -> None:
    block, _, limits = _drive(tmp_path, slack_s=120.0)
    assert block["time_cost_s"] <= 120.0 + 60.0  # at most one tick past the slack
    assert block["time_cost_s"] >= 120.0
    assert block["changes"][-1]["reason"] == "deadline: no slack left"
    assert limits[150] == 250.0  # dirty, but no slack: uncapped
    (tmp_path / "uncapped").mkdir()
    full, _, _ = _drive(tmp_path / "uncapped", slack_s=None)
    assert 0 < block["co2_saved_g"] < full["co2_saved_g"]


@given(st.one_of(
    st.none(), st.integers(), st.text(max_size=5),
    st.lists(st.dictionaries(st.sampled_from(["power_limit_w", "time_s", "energy_j", "x"]),
                             st.one_of(st.floats(), st.text(max_size=3), st.none())), max_size=4),
))  # fmt: skip
def test_a_bad_curve_is_one_clear_error(data: Any) -> None:
    try:
        curve = CapCurve.from_json(data, "curve.json")
    except ConfigError as exc:
        assert "curve" in str(exc)
    else:
        assert len(curve.profiles) >= 2
        assert all(p.time_s > 0 and p.energy_j > 0 for p in curve.profiles)


def test_greenml_run_caps_on_the_fake_gpus_and_records_it(tmp_path: Path) -> None:
    state = tmp_path / "fake-gpus.json"
    env = {**os.environ, "GREENML_FAKE_NVML": "tests.optimize.fake_gpus:nvml",
           "GREENML_TEST_FAKE_STATE": str(state), "GREENML_GPU_STATE": str(tmp_path / "l.json"),
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}  # fmt: skip
    hour = datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0)
    trace = _trace(tmp_path / "ci.csv", [600.0] * 4, (hour - timedelta(hours=1)).timestamp())
    curve = tmp_path / "curve.json"
    curve.write_text(json.dumps({"profiles": [
        {"power_limit_w": p.power_limit_w, "time_s": p.time_s, "energy_j": p.energy_j}
        for p in _curve().profiles]}))  # fmt: skip
    out_json = tmp_path / "run.json"
    result = subprocess.run([
        sys.executable, "-m", "greenml", "run", "--cap-when-dirty", "--cap-curve", str(curve),
        "--dirty-above", "300", "--intensity-trace", str(trace), "--db", str(tmp_path / "r.db"),
        "--json-out", str(out_json), "--", "python3", "-c", "import time; time.sleep(4)",
    ], env=env, capture_output=True, text=True, check=False, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    block = RunRecord.from_dict(json.loads(out_json.read_text())).dirty_cap
    assert block is not None
    assert [c.reason for c in block.changes] == ["dirty"]
    assert block.changes[0].power_limit_w == _curve().capped.power_limit_w
    assert block.capped_s > 1.0
    assert block.co2_saved_g > 0
    assert "capped at" in result.stderr
    limits = json.loads(state.read_text())
    assert set(limits.values()) == {250.0}, limits  # restored after the run


def test_bad_requests_are_refused_before_the_command_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from greenml.cli import main

    marker = tmp_path / "ran"
    cmd = ["--", "python3", "-c", f"open({str(marker)!r}, 'w')"]
    assert main(["run", "--cap-when-dirty", "--ci", "300", *cmd]) == 2
    assert "--cap-curve" in capsys.readouterr().err
    assert main(["run", "--dirty-above", "300", "--ci", "300", *cmd]) == 2
    assert "go with --cap-when-dirty" in capsys.readouterr().err
    assert not marker.exists()

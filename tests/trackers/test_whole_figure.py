"""Trackers carry the whole figure: the uncertainty beside each value, the greenml run id,
and (MLflow) MLflow's own GPU power system metrics read back as a second source.

Real MLflow (file store in tmp), real W&B (offline), real TensorBoard event files.
MLflow's system-metrics monitor needs a GPU behind NVML; here the test logs the samples
under the names that monitor uses (checked against MLflow's own source below).
"""

from __future__ import annotations

import inspect
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import greenml
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from greenml.trackers.mlflow_system import POWER_KEY, integrate_j
from tests.trackers.wandb_log import history_and_summary

CI = 400.0
WATTS = 250.0


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("GREENML_DB", "GREENML_EVENTS", "GREENML_ZONE", "GREENML_CI"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("GREENML_SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.chdir(tmp_path)


def _sensor() -> FakeSensor:
    return FakeSensor([FakeDevice("gpu0", [(0, WATTS)])])


def test_mlflow_names_match_mlflows_own_system_metrics_monitor() -> None:
    pytest.importorskip("mlflow")
    from mlflow.system_metrics.metrics.gpu_monitor import GPUMonitor
    from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

    assert 'f"gpu_{i}_power_usage_watts"' in inspect.getsource(GPUMonitor)
    assert '"system/"' in inspect.getsource(SystemMetricsMonitor)
    assert POWER_KEY.match("system/gpu_3_power_usage_watts")
    assert POWER_KEY.match("system/node_1/gpu_0_power_usage_watts")
    assert not POWER_KEY.match("system/gpu_0_power_usage_percentage")


def test_mlflow_gets_uncertainties_the_run_id_tag_and_its_system_gpu_power_as_second_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mlflow = pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    mlflow.set_tracking_uri((tmp_path / "mlruns").as_uri())
    client = mlflow.tracking.MlflowClient()
    stamps: list[int] = []
    with mlflow.start_run(run_name="mine") as mine:
        rid = mine.info.run_id
        with greenml.Run("tracked", ci=CI, sensors=[_sensor()], db=str(tmp_path / "r.db"),
                         log_to=["mlflow"], tick_s=0.02) as run:  # fmt: skip
            for step in range(4):
                with run.window("epoch"):
                    stamps.append(int(time.time() * 1000))
                    client.log_metric(rid, "system/gpu_0_power_usage_watts", WATTS,
                                      timestamp=stamps[-1], step=step)  # fmt: skip
                    time.sleep(0.05)
    record = run.record
    assert record is not None and record.carbon is not None
    found = client.get_run(rid)
    assert found.data.tags["greenml.run_id"] == record.id
    metrics = found.data.metrics
    assert metrics["greenml/energy_kwh_uncertainty"] == pytest.approx(
        record.energy.total_kwh * record.energy.uncertainty_rel)
    assert metrics["greenml/co2_kg_uncertainty"] == pytest.approx(
        record.carbon.kg * (record.carbon.uncertainty_rel or 0.0))
    epochs = client.get_metric_history(rid, "greenml/epoch/energy_kwh_uncertainty")
    assert len(epochs) == 4 and all(m.value > 0 for m in epochs)
    # the second source: MLflow's samples integrated over the greenml run's span
    expected_j = WATTS * (stamps[-1] - stamps[0]) / 1000
    assert expected_j > 0
    assert metrics["greenml/mlflow_system/gpu_energy_kwh"] == pytest.approx(expected_j / 3.6e6,
                                                                         rel=1e-4)  # fmt: skip
    own_gpu_j = record.energy.components["gpu"].energy_j
    assert metrics["greenml/mlflow_system/gpu_energy_diff_rel"] == pytest.approx(
        expected_j / own_gpu_j - 1, rel=1e-4)
    assert -1 < metrics["greenml/mlflow_system/gpu_energy_diff_rel"] < 0  # a shorter span


def test_mlflow_without_system_metrics_logs_no_second_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mlflow = pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "mlruns").as_uri())
    with greenml.Run("plain", ci=CI, sensors=[_sensor()], db=str(tmp_path / "r.db"),
                     log_to=["mlflow"], tick_s=0.02) as run, run.window("epoch"):  # fmt: skip
        time.sleep(0.03)
    client = mlflow.tracking.MlflowClient()
    (found,) = client.search_runs([client.get_experiment_by_name("greenml").experiment_id])
    assert "greenml/energy_kwh_uncertainty" in found.data.metrics
    assert not any(k.startswith("greenml/mlflow_system/") for k in found.data.metrics)
    assert run.record is not None and found.data.tags["greenml.run_id"] == run.record.id


def test_tensorboard_and_wandb_get_uncertainties_and_the_run_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("tensorboard")
    wandb = pytest.importorskip("wandb")
    wandb.teardown()  # W&B keeps its first settings (WANDB_DIR) for the process otherwise
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    monkeypatch.setenv("GREENML_TENSORBOARD_DIR", str(tmp_path / "tb"))
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    with greenml.Run("both", ci=CI, price=0.3, sensors=[_sensor()], db=str(tmp_path / "r.db"),
                     log_to=["tensorboard", "wandb"], tick_s=0.02) as run:  # fmt: skip
        for _ in range(2):
            with run.window("epoch"):
                time.sleep(0.03)
    record = run.record
    assert record is not None
    events = EventAccumulator(str(tmp_path / "tb"))
    events.Reload()
    (total,) = events.Scalars("greenml/energy_kwh_uncertainty")
    assert total.value == pytest.approx(record.energy.total_kwh * record.energy.uncertainty_rel,
                                        rel=1e-6)  # fmt: skip
    assert len(events.Scalars("greenml/epoch/energy_kwh_uncertainty")) == 2
    assert "greenml.run_id/text_summary" in events.Tags()["tensors"]
    (run_file,) = tmp_path.glob("wandb/offline-run-*/run-*.wandb")
    deadline = time.monotonic() + 20
    _, summary = history_and_summary(run_file)
    while "greenml/cost_usd_uncertainty" not in summary and time.monotonic() < deadline:
        time.sleep(0.2)
        _, summary = history_and_summary(run_file)
    assert record.cost is not None
    assert summary["greenml/cost_usd_uncertainty"] == pytest.approx(
        record.cost.usd * (record.cost.uncertainty_rel or 0.0))


@given(st.lists(st.tuples(st.floats(0, 1e4), st.floats(-10, 1e4)), max_size=30),
       st.floats(0, 1e4), st.floats(0, 1e4))  # fmt: skip
def test_integration_is_bounded_by_the_span_and_the_peak(
    points: list[tuple[float, float]], a: float, b: float
) -> None:
    start, end = min(a, b), max(a, b)
    energy = integrate_j(points, start, end)
    peak = max((w for t, w in points if start <= t <= end), default=0.0)
    assert 0 <= energy <= (end - start) * max(peak, 0.0) * (1 + 1e-9) + 1e-9

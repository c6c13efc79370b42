"""Tracker sinks: what a Run logs to MLflow, W&B (offline) and TensorBoard, read back."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import greenml
from greenml.errors import ConfigError, MissingExtra
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from greenml.trackers.factory import make_sinks
from tests.trackers.wandb_log import history_and_summary

CI = 400.0


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("GREENML_DB", "GREENML_EVENTS", "GREENML_ZONE", "GREENML_CI"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("GREENML_SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.chdir(tmp_path)


def train(tmp_path: Path, log_to: list[Any], epochs: int = 3) -> greenml.Run:
    sensor = FakeSensor([FakeDevice("gpu0", [(0, 250.0)])])
    with greenml.Run("sink-test", ci=CI, price=0.3, sensors=[sensor], db=str(tmp_path / "r.db"),
                     log_to=log_to, tick_s=0.02) as run:  # fmt: skip
        for _ in range(epochs):
            with run.window("epoch"):
                time.sleep(0.02)
    assert run.record is not None
    return run


def epoch_kwh(run: greenml.Run) -> list[float]:
    assert run.record is not None
    return [w.energy_j / 3.6e6 for w in run.record.windows if w.name == "epoch"]


def test_mlflow_gets_window_metrics_totals_record_and_statement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mlflow = pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "mlruns").as_uri())
    run = train(tmp_path, ["mlflow"])
    client = mlflow.tracking.MlflowClient()
    (found,) = client.search_runs([client.get_experiment_by_name("greenml").experiment_id])
    rid = found.info.run_id
    assert found.info.status == "FINISHED" and found.info.run_name == "sink-test"
    history = client.get_metric_history(rid, "greenml/epoch/energy_kwh")
    assert [m.step for m in history] == [0, 1, 2]
    assert [m.value for m in history] == pytest.approx(epoch_kwh(run))
    co2 = client.get_metric_history(rid, "greenml/epoch/co2_kg")
    assert [m.value for m in co2] == pytest.approx([k * CI / 1000 for k in epoch_kwh(run)])
    assert found.data.metrics["greenml/co2_kg"] == pytest.approx(run.record.carbon.kg)
    folder = Path(client.download_artifacts(rid, "greenml", str(tmp_path / "dl")))
    assert json.loads((folder / "run_record.json").read_text())["id"] == run.record.id
    assert "Carbon Impact Statement" in (folder / "impact_statement.md").read_text()


def test_mlflow_logs_into_the_users_active_run_and_leaves_it_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mlflow = pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    mlflow.set_tracking_uri((tmp_path / "mlruns").as_uri())
    with mlflow.start_run(run_name="mine") as mine:
        train(tmp_path, ["mlflow"], epochs=2)
        assert mlflow.active_run() is not None
    client = mlflow.tracking.MlflowClient()
    assert len(client.get_metric_history(mine.info.run_id, "greenml/epoch/energy_kwh")) == 2


def test_tensorboard_event_files_hold_the_windows_and_totals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    monkeypatch.setenv("GREENML_TENSORBOARD_DIR", str(tmp_path / "tb"))
    run = train(tmp_path, ["tensorboard"])
    events = EventAccumulator(str(tmp_path / "tb"))
    events.Reload()
    energy = events.Scalars("greenml/epoch/energy_kwh")
    assert [e.step for e in energy] == [0, 1, 2]
    assert [e.value for e in energy] == pytest.approx(epoch_kwh(run), rel=1e-6)
    assert events.Scalars("greenml/cost_usd")[0].value == pytest.approx(run.record.cost.usd)
    assert "greenml/impact_statement/text_summary" in events.Tags()["tensors"]


def test_wandb_offline_run_has_the_windows_and_totals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    run = train(tmp_path, ["wandb"])
    (run_file,) = tmp_path.glob("wandb/offline-run-*/run-*.wandb")
    deadline = time.monotonic() + 20
    rows, summary = history_and_summary(run_file)
    while "greenml/energy_kwh" not in summary and time.monotonic() < deadline:
        time.sleep(0.2)  # W&B's writer process may still be flushing the file
        rows, summary = history_and_summary(run_file)
    epochs = [r for r in rows if "greenml/epoch/energy_kwh" in r]
    assert [r["greenml/epoch/step"] for r in epochs] == [0, 1, 2]  # their own step axis
    assert [r["greenml/epoch/energy_kwh"] for r in epochs] == pytest.approx(epoch_kwh(run))
    assert summary["greenml/energy_kwh"] == pytest.approx(run.record.energy.total_kwh)
    assert summary["greenml/co2_kg"] == pytest.approx(run.record.carbon.kg)


def test_an_unknown_tracker_is_a_config_error_and_a_missing_one_names_its_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ConfigError, match="unknown tracker"):
        make_sinks(["neptune"])
    import importlib.util

    real = importlib.util.find_spec

    def without_tensorboard(name: str, *args: Any) -> Any:
        return None if name == "tensorboard" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_tensorboard)
    with pytest.raises(MissingExtra, match=r"pip install 'greenml\[tensorboard\]'"):
        make_sinks(["tensorboard"])


def test_greenml_run_log_to_sends_the_commands_published_windows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("tensorboard")
    import sys
    import textwrap

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from greenml.run import runner

    monkeypatch.setenv("GREENML_TENSORBOARD_DIR", str(tmp_path / "tb"))
    sensor = FakeSensor([FakeDevice("cpu0", [(0, 80.0)])])
    monkeypatch.setattr(runner, "discover_cpu_sensors", lambda *a, **k: ([sensor], []))
    src = str(Path(__file__).resolve().parents[2] / "src")
    child = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {src!r})
        from greenml import Meter
        from greenml.measure.sensors.fake import FakeDevice, FakeSensor
        meter = Meter(sensors=[FakeSensor([FakeDevice("gpu0", [(0, 100.0)])])], sample_hz=0,
                      publish_windows=True)
        for _ in range(2):
            with meter.window("epoch"):
                time.sleep(0.02)
    """)
    options = runner.RunOptions(
        command=[sys.executable, "-c", child], db_url=str(tmp_path / "r.db"), gpus=[],
        log_to=["tensorboard"], wait_for_store=True,
        accounting=runner.AccountingOptions(ci=CI),
    )  # fmt: skip
    result = runner.run_measured(options)
    assert result.exit_code == 0 and result.record is not None
    events = EventAccumulator(str(tmp_path / "tb"))
    events.Reload()
    epochs = events.Scalars("greenml/epoch/rank0/energy_kwh")
    stored = [w.energy_j / 3.6e6 for w in result.record.windows if w.name == "epoch/rank0"]
    assert [e.value for e in epochs] == pytest.approx(stored, rel=1e-6) and len(stored) == 2
    assert events.Scalars("greenml/co2_kg")[0].value == pytest.approx(result.record.carbon.kg)

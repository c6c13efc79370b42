"""A real Lightning Trainer (CPU, tiny model) with the greenml callback on a fake V100."""

from __future__ import annotations

import csv
import logging
from pathlib import Path
from typing import Any

import pytest

pl = pytest.importorskip("pytorch_lightning")
torch = pytest.importorskip("torch")

from greenml.integrations.lightning import GreenmlCallback  # noqa: E402
from greenml.measure.meter import Meter  # noqa: E402
from tests.fakes.fake_pynvml import FakeNvml  # noqa: E402
from tests.optimize.fake_gpus import expected_choice, v100_curve  # noqa: E402

BATCHES_PER_EPOCH, EPOCHS = 12, 3


class Tiny(pl.LightningModule):  # type: ignore[misc,name-defined]
    """A linear regression whose steps run on the fake GPU (the clock moves by its step time)."""

    def __init__(self, nvml: FakeNvml, fail_at: int | None = None) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)
        self.nvml, self.fail_at = nvml, fail_at

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        if self.fail_at is not None and self.global_step >= self.fail_at:
            raise RuntimeError("loss is nan")
        self.nvml.run_step()
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.01)


def fit(model: Tiny, callback: GreenmlCallback, logger: Any = False) -> None:
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(*(torch.randn(4 * BATCHES_PER_EPOCH, n) for n in (4, 1)))
    trainer = pl.Trainer(
        max_epochs=EPOCHS, accelerator="cpu", devices=1, callbacks=[callback], logger=logger,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
    )  # fmt: skip
    logging.getLogger("pytorch_lightning").setLevel(logging.ERROR)
    trainer.fit(model, torch.utils.data.DataLoader(data, batch_size=4))


def test_windows_per_step_and_epoch_and_a_tuned_limit(
    nvml: FakeNvml, meter: Meter, tuning: dict[str, Any]
) -> None:
    callback = GreenmlCallback(meter, power_limit=tuning)
    fit(Tiny(nvml), callback)
    steps = [m for m in callback.measurements if m.name == "step"]
    epochs = [m for m in callback.measurements if m.name == "epoch"]
    assert len(steps) == BATCHES_PER_EPOCH * EPOCHS and len(epochs) == EPOCHS
    assert all(m.energy_of("gpu") > 0 and m.components["gpu"].method == "counter" for m in steps)
    assert sum(m.total_j for m in epochs) == pytest.approx(sum(m.total_j for m in steps), rel=1e-6)
    chosen = expected_choice(0.5)
    optimizer = callback.optimizer
    assert optimizer is not None and optimizer.chosen is not None
    assert optimizer.chosen.power_limit_w == chosen == 175.0
    assert ("GPU-v100-aaaa-0000", chosen) in nvml.set_calls  # applied on the fake NVML ...
    power_w, step_s = next((p, t) for w, p, t in v100_curve() if w == chosen)
    last = steps[-1]  # ... and kept: the last steps ran at it
    assert last.duration_s == pytest.approx(step_s) and last.total_j == pytest.approx(
        power_w * step_s, abs=2e-3
    )
    assert nvml.gpus[0].power_limit_w == 250.0 and optimizer.phase == "closed"  # restored


def test_a_failing_run_restores_the_limit(
    nvml: FakeNvml, meter: Meter, tuning: dict[str, Any]
) -> None:
    callback = GreenmlCallback(meter, power_limit=tuning)
    with pytest.raises(RuntimeError, match="loss is nan"):
        fit(Tiny(nvml, fail_at=5), callback)
    assert [w for _, w in nvml.set_calls][:3] == [250.0, 250.0, 225.0]  # it was profiling
    assert nvml.gpus[0].power_limit_w == 250.0
    assert len([m for m in callback.measurements if m.name == "step"]) == 5


def test_inside_a_run_epochs_are_stored_sent_to_mlflow_and_in_the_trainers_logs(
    nvml: FakeNvml, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mlflow = pytest.importorskip("mlflow")
    import greenml
    from greenml.measure.sensors.nvml import NvmlSensor

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "mlruns").as_uri())
    logger = pl.loggers.CSVLogger(str(tmp_path), name="csv", version=0)
    with greenml.Run("lit", ci=400, sensors=[NvmlSensor(nvml=nvml)], sample_hz=0,
                     db=str(tmp_path / "r.db"), log_to=["mlflow"]) as run:  # fmt: skip
        callback = GreenmlCallback()
        fit(Tiny(nvml), callback, logger=logger)
    assert run.record is not None
    epochs = [w for w in run.record.windows if w.name == "epoch"]
    assert len(epochs) == EPOCHS and all(w.energy_j > 0 for w in epochs)
    rows = list(csv.DictReader((tmp_path / "csv" / "version_0" / "metrics.csv").open()))
    logged = [float(r["greenml/energy_kwh"]) for r in rows if r.get("greenml/energy_kwh")]
    running = [sum(w.energy_j for w in epochs[: i + 1]) / 3.6e6 for i in range(EPOCHS)]
    assert logged == pytest.approx(running)
    co2 = [float(r["greenml/co2_kg"]) for r in rows if r.get("greenml/co2_kg")]
    assert co2[-1] == pytest.approx(running[-1] * 0.4)
    client = mlflow.tracking.MlflowClient()
    (found,) = client.search_runs([client.get_experiment_by_name("greenml").experiment_id])
    history = client.get_metric_history(found.info.run_id, "greenml/epoch/energy_kwh")
    assert [m.value for m in history] == pytest.approx([w.energy_j / 3.6e6 for w in epochs])


def test_log_to_alone_starts_a_stored_run_for_training(
    nvml: FakeNvml, meter: Meter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from greenml.store import open_store

    monkeypatch.setenv("GREENML_DB", str(tmp_path / "r.db"))
    monkeypatch.setenv("GREENML_TENSORBOARD_DIR", str(tmp_path / "tb"))
    callback = GreenmlCallback(meter, log_to=["tensorboard"], run_name="tb-run")
    fit(Tiny(nvml), callback)
    events = EventAccumulator(str(tmp_path / "tb"))
    events.Reload()
    assert len(events.Scalars("greenml/epoch/energy_kwh")) == EPOCHS
    with open_store(str(tmp_path / "r.db")) as store:
        (row,) = store.list_runs()
    assert row["name"] == "tb-run" and row["status"] == "completed"
def test_flops_counted_on_sampled_steps_with_mfu(nvml: FakeNvml, meter: Meter) -> None:
    callback = GreenmlCallback(meter, flops=5)
    fit(Tiny(nvml), callback)
    totals = callback.flops
    assert totals is not None
    steps = BATCHES_PER_EPOCH * EPOCHS
    assert totals["steps"] == steps and totals["sampled_steps"] == len(range(0, steps, 5))
    # Linear(4, 1) on 4 samples: forward 2·4·4·1 and the weight gradient as much again
    assert totals["flops"] == pytest.approx(steps * 2 * (2 * 4 * 4 * 1))
    assert totals["samples"] == 4 * steps
    step = callback.measurements[0]
    block = callback.windows.flops.block(step, window="step", steps=1)  # type: ignore[union-attr]
    assert block["flops"] == 64 and block["flops_per_s"] == pytest.approx(64 / step.duration_s)
    assert block["mfu"] == pytest.approx(64 / step.duration_s / 15.7e12)
    assert "V100" in block["peak_source"] and block["j_per_sample"] > 0

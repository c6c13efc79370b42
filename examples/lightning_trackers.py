"""Train a small Lightning model on the digits data set; its energy goes to three trackers.

Offline: MLflow writes a local file store (``./mlruns``), W&B an offline run
(``./wandb``), TensorBoard event files (``./runs``). The greenml run is stored too
(``greenml runs list``)::

    pip install 'greenml[lightning,mlflow,wandb,tensorboard,examples]'
    python examples/lightning_trackers.py
    mlflow ui            # greenml/epoch/energy_kwh, greenml/energy_kwh … ; or
    tensorboard --logdir runs
"""

from __future__ import annotations

import os
from typing import Any

import pytorch_lightning as pl
import torch
from sklearn.datasets import load_digits

from greenml.integrations.lightning import GreenmlCallback

os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3: a local file store
os.environ.setdefault("MLFLOW_TRACKING_URI", "file:./mlruns")
os.environ.setdefault("WANDB_MODE", "offline")


class Digits(pl.LightningModule):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)
        )

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        self.log("loss", loss)
        return loss

    def configure_optimizers(self) -> Any:
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def main() -> None:
    digits = load_digits()
    data = torch.utils.data.TensorDataset(
        torch.tensor(digits.data / 16.0, dtype=torch.float32), torch.tensor(digits.target)
    )
    callback = GreenmlCallback(log_to=["mlflow", "wandb", "tensorboard"], run_name="digits-pl")
    trainer = pl.Trainer(
        max_epochs=3, accelerator="cpu", callbacks=[callback], enable_progress_bar=False,
        logger=pl.loggers.CSVLogger("runs", name="digits-pl"),
    )  # fmt: skip
    trainer.fit(Digits(), torch.utils.data.DataLoader(data, batch_size=64, shuffle=True))
    run = callback.windows.run
    record = run.record if run is not None else None
    if record is not None:
        wh = record.energy.total_kwh * 1000
        epochs = len(callback.windows.epochs)
        print(f"greenml run {record.id}: {wh:.3g} Wh over {epochs} epochs; see ./mlruns, ./wandb")


if __name__ == "__main__":
    main()

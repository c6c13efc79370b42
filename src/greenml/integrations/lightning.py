"""PyTorch Lightning callback: energy per step and epoch, and GPU power-limit tuning.

    from greenml.integrations.lightning import GreenmlCallback
    callback = GreenmlCallback(power_limit=True)      # or power_limit={"eta": 0.8}
    Trainer(callbacks=[callback]).fit(model)
    callback.measurements                             # "step" and "epoch" windows
    GreenmlCallback(log_to=["mlflow"])                # a stored greenml run, epochs in MLflow

Each epoch also logs ``greenml/energy_kwh`` and ``greenml/co2_kg`` (training so far)
through ``pl_module.log``, so every logger of the Trainer receives them.

``GreenmlCallback(flops=100)`` also counts FLOPs on every 100th step
(:class:`~greenml.measure.flops.FlopSampler`): ``callback.flops``.

Works with ``pytorch_lightning`` and with the unified ``lightning`` package.
Steps are training batches (``on_train_batch_start``/``_end``). The original
power limits are restored when training ends or fails.
"""

from __future__ import annotations

from typing import Any

from greenml.errors import MissingExtra
from greenml.integrations.windows import WindowsCallback

try:
    from pytorch_lightning import Callback
except ImportError:  # the unified package
    try:
        from lightning.pytorch import Callback  # type: ignore[no-redef]
    except ImportError as exc:
        raise MissingExtra(
            "greenml.integrations.lightning (pytorch-lightning, or the unified lightning package)",
            "lightning",
            exc,
        ) from None


class GreenmlCallback(WindowsCallback, Callback):  # type: ignore[misc]
    """Meter windows ``step`` and ``epoch`` over training; optionally tunes power limits.

    Arguments (``meter``, ``power_limit``, ``keep_steps``, ``sync_execution``):
    see :class:`~greenml.integrations.windows.WindowsCallback`.
    """

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self.windows.start()

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        self.windows.epoch_begin()

    def on_train_batch_start(
        self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int
    ) -> None:
        self.windows.step_begin()

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        self.windows.step_end(samples=batch_size(batch))

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self.windows.epoch_end()
        for key, value in self.windows.framework_logs().items():
            pl_module.log(key, value, on_step=False, on_epoch=True)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self.windows.stop()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self.windows.stop()

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self.windows.stop()


def batch_size(batch: Any) -> float | None:
    """Samples in a batch: the first dimension of its (first) tensor; None if none is found."""
    if isinstance(batch, dict):
        batch = next(iter(batch.values()), None)
    if isinstance(batch, (list, tuple)) and batch:
        batch = batch[0]
    shape = getattr(batch, "shape", None)
    return float(shape[0]) if shape is not None and len(shape) > 0 else None

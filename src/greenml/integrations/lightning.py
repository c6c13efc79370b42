"""PyTorch Lightning callback: energy per step and epoch, and GPU power-limit tuning.

    from greenml.integrations.lightning import GreenmlCallback
    callback = GreenmlCallback(power_limit=True)      # or power_limit={"eta": 0.8}
    Trainer(callbacks=[callback]).fit(model)
    callback.measurements                             # "step" and "epoch" windows

Works with ``pytorch_lightning`` and with the unified ``lightning`` package.
Steps are training batches (``on_train_batch_start``/``_end``). The original
power limits are restored when training ends or fails.
"""

from __future__ import annotations

from typing import Any

from greenml.integrations.windows import WindowsCallback

try:
    from pytorch_lightning import Callback
except ImportError:  # the unified package
    from lightning.pytorch import Callback  # type: ignore[no-redef]


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
        self.windows.step_end()

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self.windows.epoch_end()

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self.windows.stop()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self.windows.stop()

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self.windows.stop()

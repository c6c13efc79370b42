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

from greenml.integrations.windows import TrainingWindows

try:
    from pytorch_lightning import Callback
except ImportError:  # the unified package
    from lightning.pytorch import Callback  # type: ignore[no-redef]


class GreenmlCallback(Callback):  # type: ignore[misc]
    """Meter windows ``step`` and ``epoch`` over training; optionally tunes power limits.

    Args:
        meter: The Meter to use; one over this machine's sensors when None.
        power_limit: A PowerLimitOptimizer, True, or its keyword arguments.
        keep_steps: Step windows kept in :attr:`measurements`.
        sync_execution: Wait for pending CUDA work at each window boundary.
    """

    def __init__(
        self,
        meter: Any | None = None,
        power_limit: Any = False,
        keep_steps: int = 10_000,
        sync_execution: bool = True,
    ) -> None:
        super().__init__()
        self.windows = TrainingWindows(meter, power_limit, keep_steps, sync_execution)

    @property
    def measurements(self) -> list[Any]:
        """Finished windows in order (``m.name`` is ``step`` or ``epoch``)."""
        return self.windows.measurements

    @property
    def optimizer(self) -> Any | None:
        """The PowerLimitOptimizer once training started, else None."""
        return self.windows.optimizer

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

"""Hugging Face transformers callback: energy per step and epoch, power-limit tuning.

    from greenml.integrations.hf import GreenmlTrainerCallback
    callback = GreenmlTrainerCallback(power_limit=True)
    Trainer(model, args, train_dataset=data, callbacks=[callback]).train()
    callback.measurements                             # "step" and "epoch" windows

A step is an optimizer step (``on_step_begin``/``on_step_end``; with gradient
accumulation it spans several batches). The original power limits are
restored at the end of training; transformers has no hook for a failed run,
so there the optimizer's exit and SIGTERM guards restore them, or call
:meth:`GreenmlTrainerCallback.close`.
"""

from __future__ import annotations

from typing import Any

from transformers import TrainerCallback

from greenml.integrations.windows import TrainingWindows


class GreenmlTrainerCallback(TrainerCallback):  # type: ignore[misc]
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
        self.windows = TrainingWindows(meter, power_limit, keep_steps, sync_execution)

    @property
    def measurements(self) -> list[Any]:
        """Finished windows in order (``m.name`` is ``step`` or ``epoch``)."""
        return self.windows.measurements

    @property
    def optimizer(self) -> Any | None:
        """The PowerLimitOptimizer once training started, else None."""
        return self.windows.optimizer

    def close(self) -> None:
        """Close open windows and restore the power limits (safe to call twice)."""
        self.windows.stop()

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.windows.start()

    def on_epoch_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.windows.epoch_begin()

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.windows.step_begin()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.windows.step_end()

    def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.windows.epoch_end()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.windows.stop()

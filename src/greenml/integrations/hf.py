"""Hugging Face transformers callback: energy per step and epoch, power-limit tuning.

    from greenml.integrations.hf import GreenmlTrainerCallback
    callback = GreenmlTrainerCallback(power_limit=True)
    Trainer(model, args, train_dataset=data, callbacks=[callback]).train()
    callback.measurements                             # "step" and "epoch" windows

``GreenmlTrainerCallback(flops=100)`` also counts FLOPs on every 100th step
(:class:`~greenml.measure.flops.FlopSampler`): ``callback.flops``.

A step is an optimizer step (``on_step_begin``/``on_step_end``; with gradient
accumulation it spans several batches). The original power limits are
restored at the end of training; transformers has no hook for a failed run,
so there the optimizer's exit and SIGTERM guards restore them, or call
:meth:`GreenmlTrainerCallback.close`.
"""

from __future__ import annotations

from typing import Any

from transformers import TrainerCallback

from greenml.integrations.windows import WindowsCallback


class GreenmlTrainerCallback(WindowsCallback, TrainerCallback):  # type: ignore[misc]
    """Meter windows ``step`` and ``epoch`` over training; optionally tunes power limits.

    Arguments (``meter``, ``power_limit``, ``keep_steps``, ``sync_execution``):
    see :class:`~greenml.integrations.windows.WindowsCallback`.
    """

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

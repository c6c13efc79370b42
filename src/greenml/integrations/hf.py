"""Hugging Face transformers callback: energy per step and epoch, power-limit tuning.

    from greenml.integrations.hf import GreenmlTrainerCallback
    callback = GreenmlTrainerCallback(power_limit=True)
    Trainer(model, args, train_dataset=data, callbacks=[callback]).train()
    callback.measurements                             # "step" and "epoch" windows
    GreenmlTrainerCallback(log_to=["mlflow"])         # a stored greenml run, epochs in MLflow

Every ``on_log`` also gets ``greenml/energy_kwh`` and ``greenml/co2_kg`` (training so
far) added to its ``logs``: the Trainer's ``state.log_history``, its printer, and the callbacks
after this one receive them. (transformers puts its ``report_to`` loggers before the
user's callbacks; ``log_to`` sends the same figures to those trackers directly.)

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

from greenml.errors import MissingExtra
from greenml.integrations.windows import WindowsCallback

try:
    from transformers import TrainerCallback
except ImportError as exc:
    raise MissingExtra("greenml.integrations.hf", "transformers", exc) from None


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

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:  # fmt: skip
        if logs is not None and self.windows.measurements:
            figures = self.windows.framework_logs()
            logs.update(figures)
            history = getattr(state, "log_history", None)
            if history:  # the copy of these logs the Trainer has just kept
                history[-1].update(figures)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.windows.stop()

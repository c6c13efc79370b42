"""A PyTorch Lightning callback: periodic checkpoints per policy, emergency checkpoint, exit 75.

::

    cb = ResilienceCallback("checkpoints/", policy=Adaptive(30.0, 0.041),
                            interrupts=Interrupts(notices="aws"))
    trainer = Trainer(max_steps=10_000, callbacks=[cb])
    trainer.fit(model, datamodule=dm, ckpt_path=cb.resume_path())

The checkpoint *content* is Lightning's own (``dump_checkpoint``: model,
optimizers, schedulers, precision plugin, loops, callbacks), plus the RNG
states of Python, NumPy and torch and the interval policy's estimates; the
*writing* is greenml's (:class:`~greenml.resilience.checkpointer.Checkpointer`:
temporary file, fsync, rename, a manifest with checksums written last,
retention). :meth:`ResilienceCallback.resume_path` returns the newest
checkpoint whose files match their manifest, for ``fit(ckpt_path=...)``.

Exactness: Lightning resumes mid-epoch by restarting the epoch's data iterator
unless the dataloader is stateful (torchdata ``StatefulDataLoader``); with one,
or with checkpoints at epoch ends, the resumed run matches the uninterrupted
one. The saved RNG states are restored at the first batch after the resume.

Our SIGTERM/SIGUSR1 handlers are installed in ``setup`` (before Lightning's
own), so Lightning chains them, and on SLURM Lightning does not install its
auto-requeue handler over ours. Only global rank zero writes; call this from a
single process or make every rank see the same signal.

Built on ``trainer._checkpoint_connector.dump_checkpoint``, the method behind
``Trainer.save_checkpoint`` (stable since Lightning 1.6).
"""

from __future__ import annotations

import sys
from typing import Any

from greenml.resilience.checkpointer import Checkpointer
from greenml.resilience.policy import IntervalPolicy
from greenml.resilience.session import Interrupts, Session
from greenml.resilience.state import capture_rng, restore_rng

_HINT = "greenml.resilience.lightning needs Lightning: pip install 'greenml[lightning]'"
if "pytorch_lightning" in sys.modules and "lightning" not in sys.modules:
    import pytorch_lightning as pl
else:
    try:
        import lightning.pytorch as pl  # type: ignore[no-redef]
    except ImportError:
        try:
            import pytorch_lightning as pl  # type: ignore[no-redef]
        except ImportError as exc:
            raise ImportError(_HINT) from exc

RNG_KEY = "greenml_rng"


class ResilienceCallback(pl.Callback):  # type: ignore[misc]
    """Checkpoints per an interval policy; on SIGTERM/SIGUSR1/notice, one more, then exit.

    Args:
        checkpointer: A :class:`Checkpointer`, or a directory/URL to make one.
        policy: When to checkpoint (default: every 30 minutes of work).
        interrupts: Signals, termination notices, budget, exit code and clock
            (see :class:`~greenml.resilience.session.Interrupts`); with
            ``exit_code=None`` training stops instead of exiting.
    """

    def __init__(
        self,
        checkpointer: Checkpointer | str,
        *,
        policy: IntervalPolicy | None = None,
        interrupts: Interrupts | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(checkpointer, Checkpointer):
            checkpointer = Checkpointer(checkpointer)
        self.checkpointer = checkpointer
        self.session = Session(policy, interrupts)
        self.last_saved_step: int | None = None
        self._pending_rng: dict[str, Any] | None = None
        self._epoch_end = False

    def resume_path(self) -> str | None:
        """The state file of the newest valid checkpoint, for ``fit(ckpt_path=...)``."""
        info = self.checkpointer.latest()
        return None if info is None else self.checkpointer.state_path(info)

    # -- Lightning hooks ------------------------------------------------------------

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if stage == "fit":
            self.session.start()

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self.session.cadence.restart()

    def on_train_batch_start(
        self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int
    ) -> None:
        if self._pending_rng is not None:
            restore_rng(self._pending_rng)
            self._pending_rng = None

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        step = int(trainer.global_step)
        self._epoch_end = batch_idx + 1 >= trainer.num_training_batches
        if self.session.interrupted:
            saved = self.last_saved_step != step
            if saved:
                self.session.check_budget()
                self._save(trainer, step, "emergency")
            self.checkpointer.wait()
            if self.session.exit_code is None:
                trainer.should_stop = True
            self.session.finish(step, saved)
        elif self.session.cadence.due():
            self._save(trainer, step, "periodic")

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        step = int(trainer.global_step)
        if not self.session.interrupted and self.last_saved_step != step:
            self._save(trainer, step, "final")
        self.checkpointer.wait()

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self.session.stop()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self.session.stop()
        # Lightning restores "its original" handlers after this hook — ours, since we
        # were installed first. Point it at the ones we replaced instead.
        guard = self.session.guard
        originals = getattr(getattr(trainer, "_signal_connector", None), "_original_handlers", None)
        if isinstance(originals, dict):
            for sig, handler in list(originals.items()):
                if guard.owns(handler):
                    originals[sig] = guard.previous(sig)

    def state_dict(self) -> dict[str, Any]:
        return self.session.cadence.extra()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.session.cadence.resumed(state_dict, interrupted=True)

    def on_save_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: dict[str, Any]) -> None:
        checkpoint[RNG_KEY] = {"rng": capture_rng(), "epoch_end": self._epoch_end}

    def on_load_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: dict[str, Any]) -> None:
        saved = checkpoint.get(RNG_KEY)
        if saved is not None:
            # Now, so that the next epoch's data iterator draws what it drew in the
            # uninterrupted run; mid-epoch, again at the first batch.
            restore_rng(saved["rng"])
            self._pending_rng = None if saved["epoch_end"] else saved["rng"]
        self.last_saved_step = int(checkpoint.get("global_step", -1))

    # -- internals ------------------------------------------------------------------

    def _save(self, trainer: Any, step: int, reason: str) -> None:
        cadence = self.session.cadence
        cadence.save_starting()
        checkpoint = trainer._checkpoint_connector.dump_checkpoint(weights_only=False)
        if trainer.is_global_zero:
            self.checkpointer.save(
                checkpoint,
                step=step,
                epoch=int(trainer.current_epoch),
                reason=reason,
                extra=cadence.extra(),
            )
        trainer.strategy.barrier("greenml-checkpoint")
        cadence.save_done()
        self.last_saved_step = step

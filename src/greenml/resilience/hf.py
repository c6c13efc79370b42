"""A Hugging Face ``TrainerCallback``: checkpoints per policy, emergency checkpoint, exit 75.

::

    cb = ResilienceTrainerCallback(policy=Adaptive(30.0, 0.041),
                                   interrupts=Interrupts(notices="gcp"))
    trainer = Trainer(model=model, args=args, train_dataset=ds, callbacks=[cb])
    trainer.train(resume_from_checkpoint=latest_checkpoint(args.output_dir))

The checkpoint content and layout are the Trainer's own
(``output_dir/checkpoint-<step>/``: weights, optimizer, scheduler, scaler,
RNG states, ``trainer_state.json``), so the Trainer resumes from it exactly as
it would from its own, skipping the batches already seen. The callback asks
for a save when the policy's interval of work has passed, at the end, and at
the next step after SIGTERM/SIGUSR1 or a termination notice; once the Trainer
has written the folder, the callback fsyncs every file and seals it with a
``manifest.json`` of sizes and SHA-256 written last (temporary file, fsync,
rename). A folder without a valid manifest is partial or corrupt:
:func:`latest_checkpoint` skips it with a warning, where the Trainer's own
``get_last_checkpoint`` would pick it. Retention (``keep``) is the callback's;
leave ``save_total_limit`` unset.
"""

from __future__ import annotations

import os
import re
from typing import Any

try:
    from transformers import TrainerCallback
except ImportError as exc:
    raise ImportError(
        "greenml.resilience.hf needs transformers: pip install 'greenml[transformers]'"
    ) from exc

from greenml.errors import ConfigError, ManifestError
from greenml.resilience.checkpointer import first_valid, retain
from greenml.resilience.manifest import MANIFEST_NAME, read_manifest, seal, verified
from greenml.resilience.policy import IntervalPolicy
from greenml.resilience.session import Interrupts, Session
from greenml.resilience.storage import LocalStorage, fsync_dir

_CHECKPOINT_DIR = re.compile(r"^checkpoint-(\d+)$")


def latest_checkpoint(output_dir: str | os.PathLike[str]) -> str | None:
    """The newest ``checkpoint-<step>`` folder whose files match its manifest, or None."""
    root = os.fspath(output_dir)
    if not os.path.isdir(root):
        return None
    storage = LocalStorage(root)
    found = first_valid(storage, _checkpoints_newest_first(root), lambda n: verified(storage, n))
    return None if found is None else os.path.join(root, found[0])


class ResilienceTrainerCallback(TrainerCallback):  # type: ignore[misc]
    """Policy-driven, sealed checkpoints for ``transformers.Trainer``, and exit 75 on interruption.

    Args:
        policy: When to checkpoint (default: every 30 minutes of work).
        keep: Sealed checkpoints to keep in ``output_dir``.
        interrupts: Signals, termination notices, budget, exit code and clock
            (see :class:`~greenml.resilience.session.Interrupts`); with
            ``exit_code=None`` training stops instead of exiting.
    """

    def __init__(
        self,
        *,
        policy: IntervalPolicy | None = None,
        keep: int = 3,
        interrupts: Interrupts | None = None,
    ) -> None:
        if keep < 1:
            raise ConfigError(f"keep must be at least 1 checkpoint, not {keep}")
        self.keep = keep
        self.session = Session(policy, interrupts)
        self.sealed: list[str] = []
        self._pending: str | None = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.session.start()
        if state.global_step > 0:  # the Trainer resumed from a checkpoint
            extra: dict[str, Any] = {}
            try:
                folder = f"checkpoint-{state.global_step}"
                extra = read_manifest(LocalStorage(args.output_dir), folder).extra
            except ManifestError:
                pass
            self.session.cadence.resumed(extra, interrupted=True)
        else:
            self.session.cadence.restart()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.session.interrupted:
            self._pending = "emergency"
            control.should_training_stop = True
        elif state.global_step >= state.max_steps:
            self._pending = "final"
        elif self.session.cadence.due():
            self._pending = "periodic"
        else:
            return
        self.session.check_budget()
        self.session.cadence.save_starting()
        control.should_save = True

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        reason, self._pending = self._pending, None
        if args.should_save:
            self._seal(args.output_dir, state.global_step, int(state.epoch or 0), reason)
        if reason is not None:
            self.session.cadence.save_done()
        if reason == "emergency":
            self.session.finish(state.global_step, saved=True)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.session.stop()

    def _seal(self, output_dir: str, step: int, epoch: int, reason: str | None) -> None:
        folder = os.path.join(output_dir, f"checkpoint-{step}")
        files = []
        for directory, _, names in os.walk(folder):
            for name in names:
                path = os.path.join(directory, name)
                if name == MANIFEST_NAME and directory == folder:
                    continue
                _fsync_file(path)
                files.append(os.path.relpath(path, folder))
            fsync_dir(directory)
        seal(
            LocalStorage(output_dir),
            f"checkpoint-{step}",
            sorted(files),
            step=step,
            epoch=epoch,
            reason=reason or "trainer",
            extra=self.session.cadence.extra(),
        )
        self.sealed.append(folder)
        self._retain(output_dir)

    def _retain(self, output_dir: str) -> None:
        names = _checkpoints_newest_first(output_dir)
        retain(LocalStorage(output_dir), names, self.keep, _step_of)


def _checkpoints_newest_first(root: str) -> list[str]:
    names = [n for n in os.listdir(root) if _CHECKPOINT_DIR.match(n)]
    return sorted(names, key=_step_of, reverse=True)


def _step_of(name: str) -> int:
    match = _CHECKPOINT_DIR.match(name)
    return int(match.group(1)) if match else -1


def _fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

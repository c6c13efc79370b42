"""A preemption-safe plain training loop: ``for step in resilient_steps(...)``.

::

    ckpt = Checkpointer("checkpoints/", keep=3)
    for step in resilient_steps(10_000, ckpt, model=model, optimizer=opt,
                                scheduler=sched, generator=data_gen,
                                policy=Adaptive(30.0, 0.041),
                                interrupts=Interrupts(notices="aws")):
        loss = train_step(next_batch(step))

The generator resumes from the newest valid checkpoint (restoring the model,
optimizer, scheduler, scaler, data position and every RNG), yields the index
of each step still to run, checkpoints at step boundaries when the policy's
interval of work has passed, and after SIGTERM, SIGUSR1 or a termination
notice takes an emergency checkpoint at the next boundary and exits with
:data:`~greenml.resilience.signals.EXIT_REQUEUE` (75). A last checkpoint marks
the run finished, so running a finished job again yields nothing.

Under ``torch.distributed`` the ranks agree at each step boundary (see
:mod:`greenml.resilience.distributed`): all checkpoint at the same step, only
rank 0 writes, and all exit together after an interruption on any rank.

Exact resume needs the data to be a function of the restored state: draw
batches with the given ``generator``, or keep the position in ``data_state``
(or a stateful sampler), and do not consume random numbers outside the loop
body between steps.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from greenml.errors import ConfigError
from greenml.resilience.checkpointer import Checkpointer, Loaded
from greenml.resilience.distributed import (
    RANKS_KEY,
    StepAgreement,
    detect,
    rank_state,
    restore_rank_state,
)
from greenml.resilience.policy import IntervalPolicy
from greenml.resilience.session import Interrupts, Session
from greenml.resilience.state import TrainingState

log = logging.getLogger("greenml")


def resilient_steps(
    total_steps: int,
    checkpointer: Checkpointer,
    *,
    model: Any = None,
    optimizer: Any = None,
    scheduler: Any = None,
    scaler: Any = None,
    generator: Any = None,
    sampler: Any = None,
    data_state: dict[str, Any] | None = None,
    state: TrainingState | None = None,
    steps_per_epoch: int | None = None,
    policy: IntervalPolicy | None = None,
    interrupts: Interrupts | None = None,
    distributed: bool | None = None,
    group: Any = None,
    sync_every: int = 1,
) -> Iterator[int]:
    """Yield the steps still to run, with checkpoints, resume and interruption handling.

    Args:
        total_steps: Steps of the whole run.
        checkpointer: Where checkpoints go and come from.
        model, optimizer, scheduler, scaler, generator, sampler, data_state:
            The objects to save and restore (see :class:`TrainingState`).
        state: A ready :class:`TrainingState` instead of the objects.
        steps_per_epoch: To record the epoch (``step // steps_per_epoch``).
        policy: When to checkpoint (default: every 30 minutes of work).
        interrupts: Signals, termination notices, budget, exit code and clock
            (see :class:`~greenml.resilience.session.Interrupts`).
        distributed: Agree across ranks (True), never (False), or whenever a
            ``torch.distributed`` process group is initialized (None).
        group: The process group whose ranks agree (the default group when None).
        sync_every: Agree every this many steps (one small ``all_reduce`` each).

    Raises:
        ConfigError: Bad arguments, or a checkpoint from another model.
        CheckpointError: A checkpoint could not be written (training stops), or
            the ranks did not resume from the same checkpoint.
    """
    objects = (model, optimizer, scheduler, scaler, generator, sampler, data_state)
    if state is None:
        state = TrainingState(model, optimizer, scheduler, scaler, generator, sampler, data_state)
    elif any(obj is not None for obj in objects):
        raise ConfigError("give either state= or the objects (model=, optimizer=, …), not both")
    if total_steps < 0:
        raise ConfigError(f"total_steps must be >= 0, not {total_steps}")
    if steps_per_epoch is not None and steps_per_epoch < 1:
        raise ConfigError(f"steps_per_epoch must be >= 1, not {steps_per_epoch}")
    sync = detect(distributed, group, sync_every)
    session = Session(policy, interrupts)
    runner = _Runner(checkpointer, state, session, total_steps, steps_per_epoch, sync)
    session.start()
    try:
        yield from runner.run()
    finally:
        session.stop()


class _Runner:
    def __init__(
        self,
        checkpointer: Checkpointer,
        state: TrainingState,
        session: Session,
        total_steps: int,
        steps_per_epoch: int | None,
        sync: StepAgreement | None = None,
    ) -> None:
        self.sync = sync
        self.checkpointer = checkpointer
        self.state = state
        self.session = session
        self.total_steps = total_steps
        self.steps_per_epoch = steps_per_epoch
        self.last_saved: int | None = None

    def epoch(self, step: int) -> int:
        return step // self.steps_per_epoch if self.steps_per_epoch else 0

    def run(self) -> Iterator[int]:
        step = self.resume()
        while True:
            stop, due = self.boundary(step)
            if stop:
                self.emergency(step)
                return
            if step >= self.total_steps:
                break
            if due and self.last_saved != step:
                self.save(step, "periodic")
            yield step
            step += 1
        if self.last_saved != step:
            self.save(step, "final")
        self.checkpointer.wait()

    def boundary(self, step: int) -> tuple[bool, bool]:
        """Whether to stop, and whether a periodic checkpoint is due, at this boundary."""
        session = self.session
        due = step < self.total_steps and session.cadence.due()
        if self.sync is None:
            return session.interrupted, due and not session.interrupted
        if not self.sync.syncs_at(step, self.total_steps):
            return False, False
        interruption = session.guard.interruption
        left_s = interruption.remaining_s() if interruption is not None else None
        decision = self.sync.decide(session.interrupted, due, left_s)
        if decision.stop and not session.interrupted:  # another rank was interrupted
            session.guard.request(f"interruption of rank {decision.source_rank}", decision.budget_s)
        return decision.stop, decision.due and not decision.stop

    def resume(self) -> int:
        try:
            loaded = self.checkpointer.load_latest()
            step = 0 if loaded is None else self.restore(loaded)
        except Exception:
            if self.sync is not None:
                self.sync.agree_resume(None, failed=True)
            raise
        if self.sync is not None:
            self.sync.agree_resume(None if loaded is None else step, failed=False)
        if loaded is None:
            self.session.cadence.restart()
            return 0
        self.last_saved = step
        unfinished = step < self.total_steps
        self.session.cadence.resumed(loaded.info.extra, interrupted=unfinished)
        log.info(
            "resumed from %s (step %d of %d, %s checkpoint)",
            loaded.info.url,
            step,
            self.total_steps,
            loaded.info.reason,
        )
        return step

    def restore(self, loaded: Loaded) -> int:
        step, _epoch = self.state.restore(loaded.state)
        sync = self.sync
        if sync is not None and not restore_rank_state(self.state, loaded.state, sync.rank):
            log.warning(
                "checkpoint %s holds no RNG and data state for rank %d; it continues from rank 0's",
                loaded.info.url,
                sync.rank,
            )
        return step

    def save(self, step: int, reason: str) -> None:
        cadence = self.session.cadence
        cadence.save_starting()
        if self.sync is None:
            self.write(step, reason, None)
        else:
            self.save_together(self.sync, step, reason)
        cadence.save_done()
        self.last_saved = step

    def write(self, step: int, reason: str, ranks: list[Any] | None) -> None:
        payload = self.state.collect(step=step, epoch=self.epoch(step))
        if ranks is not None:
            payload[RANKS_KEY] = ranks
        self.checkpointer.save(
            payload,
            step=step,
            epoch=self.epoch(step),
            reason=reason,
            extra=self.session.cadence.extra(),
        )

    def save_together(self, sync: StepAgreement, step: int, reason: str) -> None:
        """Rank 0 writes (with every rank's RNG and data state); all wait for the outcome."""
        ranks = sync.gather(rank_state(self.state))
        if not sync.is_writer:
            sync.sealed(False, step)
            return
        try:
            self.write(step, reason, ranks)
            if reason != "periodic":  # about to exit: durable before anyone leaves
                self.checkpointer.wait()
        except BaseException:
            sync.sealed(True, step)
            raise
        sync.sealed(False, step)

    def emergency(self, step: int) -> None:
        saved = self.last_saved != step
        if saved:
            self.session.check_budget()
            self.save(step, "emergency")
        self.checkpointer.wait()  # an asynchronous save must be on storage before exiting
        self.session.finish(step, saved)

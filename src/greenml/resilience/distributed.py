"""Ranks that agree: one checkpoint step, one writer, one exit, under ``torch.distributed``.

Left alone, each rank of a data-parallel job decides by itself when a
checkpoint is due (by its own clock) and when to stop (on its own SIGTERM or
termination notice): one rank exits while the others wait forever in the next
collective. :class:`StepAgreement` makes the decision common. At a step
boundary every rank contributes its flags to one small ``all_reduce`` (MAX of
four float64 values: interrupt requested, checkpoint due, the smallest budget
left, the interrupted rank) and all ranks act on the result, so they all take
the same (emergency) checkpoint at the same step and all exit with 75 together.

Checkpoints: the model and optimizer states are replicated in DDP, so only
rank 0 of the group collects and writes them. What differs per rank — the
random generators, the data generator, sampler and ``data_state`` — is
gathered to rank 0 and kept in the payload under ``ranks``; on resume each
rank takes its own entry back. After a save every rank waits in one more
``all_reduce`` that says whether the write succeeded; before an emergency or
final exit rank 0 enters it only once the checkpoint is sealed on storage, so
nobody exits before it is durable, and a failed write raises on every rank
instead of leaving the others hanging.

Resume: every rank loads the newest valid checkpoint itself (the location must
be shared: a common file system or an fsspec URL) and the ranks check that they
all found the same step; a mismatch or a failure on any rank raises on all.

Cost: one ``all_reduce`` of 32 bytes per step boundary, or every
``sync_every`` steps (a signal then waits up to ``sync_every`` steps). With
NCCL the flags live on the GPU and reading them synchronizes the stream.

Lazy imports: torch (~1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from greenml.errors import CheckpointError, ConfigError
from greenml.resilience.state import TrainingState, capture_rng, restore_rng

RANKS_KEY = "ranks"
_PER_RANK = ("generator", "sampler", "data_state")


@dataclass(frozen=True)
class Decision:
    """What all ranks do at one step boundary.

    Attributes:
        stop: Some rank was asked to stop: emergency checkpoint, then exit.
        due: Some rank's cadence says a checkpoint is due.
        budget_s: The smallest budget left among the interrupted ranks (stop only).
        source_rank: The highest rank that was interrupted (stop only).
    """

    stop: bool
    due: bool
    budget_s: float | None = None
    source_rank: int | None = None


def process_group_up() -> bool:
    """Whether a ``torch.distributed`` process group is initialized (imports nothing)."""
    dist = sys.modules.get("torch.distributed")  # not imported: no group can be up
    return bool(dist is not None and dist.is_available() and dist.is_initialized())


def detect(distributed: bool | None, group: Any, sync_every: int) -> StepAgreement | None:
    """The agreement to use, or None for a rank that decides alone.

    Args:
        distributed: True to require a process group, False to never agree,
            None to agree whenever a process group is initialized.
        group: A process group (the default group when None).
        sync_every: Agree every this many step boundaries.

    Raises:
        ConfigError: ``sync_every`` < 1, or ``distributed=True``/a group without
            an initialized process group.
    """
    if sync_every < 1:
        raise ConfigError(f"sync_every must be >= 1 step, not {sync_every}")
    if distributed is False:
        return None
    if not process_group_up():
        if distributed or group is not None:
            raise ConfigError(
                "distributed agreement needs an initialized torch.distributed process group: "
                "call torch.distributed.init_process_group() first, or pass distributed=False"
            )
        return None
    return StepAgreement(group, sync_every)


class StepAgreement:
    """The collectives that keep the ranks of one group in step.

    Every method is a collective: all ranks of the group call it at the same
    boundary, in the same order.

    Args:
        group: A process group (the default group when None).
        sync_every: Agree every this many step boundaries (always at the last one).
    """

    def __init__(self, group: Any = None, sync_every: int = 1) -> None:
        import torch.distributed as dist

        self._dist = dist
        self.group = group
        self.sync_every = sync_every
        self.rank = int(dist.get_rank(group))
        self.world_size = int(dist.get_world_size(group))
        self._device = "cpu"
        if dist.get_backend(group) == "nccl":
            import torch

            self._device = f"cuda:{torch.cuda.current_device()}"

    @property
    def is_writer(self) -> bool:
        """Whether this rank writes the checkpoints (rank 0 of the group)."""
        return self.rank == 0

    def syncs_at(self, step: int, total_steps: int) -> bool:
        """Whether the ranks agree at this boundary (every ``sync_every``, and at the end)."""
        return step % self.sync_every == 0 or step >= total_steps

    def decide(self, stop: bool, due: bool, budget_left_s: float | None) -> Decision:
        """Combine every rank's flags: stop if any rank must, save if any is due."""
        budget = budget_left_s if stop and budget_left_s is not None else float("inf")
        values = self._max([float(stop), float(due), -budget, float(self.rank) if stop else -1.0])
        any_stop = values[0] > 0
        return Decision(
            stop=any_stop,
            due=values[1] > 0,
            budget_s=-values[2] if any_stop and values[2] != float("-inf") else None,
            source_rank=int(values[3]) if any_stop else None,
        )

    def sealed(self, failed: bool, step: int) -> None:
        """Wait until every rank is done with the save of ``step``; raise if any failed.

        Raises:
            CheckpointError: Another rank (the writer) failed; this rank's own
                error is the caller's to raise.
        """
        values = self._max([float(failed), float(self.rank) if failed else -1.0])
        if values[0] > 0 and not failed:
            raise CheckpointError(
                f"rank {int(values[1])} could not write the checkpoint of step {step} "
                "(see its log); every rank stops"
            )

    def agree_resume(self, step: int | None, failed: bool) -> None:
        """Check that every rank resumed from the same checkpoint step.

        Args:
            step: The step this rank resumed from; None when it found no checkpoint.
            failed: This rank could not load or restore its checkpoint.

        Raises:
            CheckpointError: Another rank failed, or the ranks found different steps.
        """
        mine = -1.0 if step is None else float(step)
        values = self._max([mine, -mine, float(failed), float(self.rank) if failed else -1.0])
        if failed:
            return  # the caller raises its own error
        if values[2] > 0:
            raise CheckpointError(f"rank {int(values[3])} could not resume (see its log)")
        newest, oldest = int(values[0]), int(-values[1])
        if newest != oldest:
            raise CheckpointError(
                f"the ranks found different newest checkpoints ({_name(oldest)} … "
                f"{_name(newest)}): every rank must read the same checkpoint location"
            )

    def gather(self, obj: Any) -> list[Any] | None:
        """Every rank's ``obj`` on the writer (None elsewhere)."""
        out: list[Any] | None = [None] * self.world_size if self.is_writer else None
        self._dist.gather_object(obj, out, group=self.group, group_dst=0)
        return out

    def _max(self, values: list[float]) -> list[float]:
        import torch

        tensor = torch.tensor(values, dtype=torch.float64, device=self._device)
        self._dist.all_reduce(tensor, op=self._dist.ReduceOp.MAX, group=self.group)
        return [float(v) for v in tensor.tolist()]


def _name(step: int) -> str:
    return "no checkpoint" if step < 0 else f"step {step}"


def rank_state(state: TrainingState) -> dict[str, Any]:
    """What differs between ranks: the RNGs and the data position."""
    part: dict[str, Any] = {"rng": capture_rng()}
    if state.generator is not None:
        part["generator"] = state.generator.get_state()
    if state.sampler is not None:
        part["sampler"] = state.sampler.state_dict()
    if state.data_state is not None:
        part["data_state"] = dict(state.data_state)
    return part


def restore_rank_state(state: TrainingState, payload: dict[str, Any], rank: int) -> bool:
    """Put this rank's own RNGs and data position back; False when the payload has none.

    A checkpoint from a run with fewer ranks has no entry for the new ones:
    they keep what :meth:`TrainingState.restore` set (rank 0's), and False is
    returned so the caller can say so.
    """
    parts = payload.get(RANKS_KEY)
    if not isinstance(parts, list) or rank >= len(parts):
        return False
    part = parts[rank]
    for key in _PER_RANK:
        obj = getattr(state, key)
        if obj is None or key not in part:
            continue
        if key == "generator":
            obj.set_state(part[key])
        elif key == "sampler":
            obj.load_state_dict(part[key])
        else:
            obj.clear()
            obj.update(part[key])
    restore_rng(part["rng"])
    return True

"""Who may change which GPU, and to what: the agent's decisions, each refusal with a reason.

- A caller with a job token (:mod:`greenml.agent.jobs`) may change that job's
  GPUs, which it names by their ordinal within the job (``gpu0`` is the job's
  first GPU, as ``CUDA_VISIBLE_DEVICES`` numbers them inside a Slurm job).
- Without a token, only where the administrator set ``require_job = false``:
  the GPUs ``[policy.users]`` lists for the caller's user name.
- root may change every GPU (it could do so without the agent).
- Every value must lie within the administrator's ``[[bounds]]`` for the GPU's
  model and within the GPU's own range; power limits and clocks can each be
  switched off.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from greenml.agent.audit import Peer
from greenml.agent.config import AgentConfig
from greenml.agent.jobs import Job, JobTable
from greenml.errors import AgentRefused


@dataclass(frozen=True)
class Grant:
    """The GPUs a caller may act on: physical ordinals, in the caller's own order."""

    gpus: tuple[int, ...]
    job: Job | None = None

    def physical(self, local: int) -> int:
        """The physical ordinal of the caller's GPU ``local``.

        Raises:
            AgentRefused: The caller has no GPU ``local``.
        """
        if not 0 <= local < len(self.gpus):
            owner = f"job {self.job.job}" if self.job else "your user"
            raise AgentRefused(f"gpu{local} is not one of the {len(self.gpus)} GPU(s) of {owner}")
        return self.gpus[local]


def grant(
    config: AgentConfig, jobs: JobTable, peer: Peer, token: str | None, gpu_count: int,
    proc: Path = Path("/proc"),
) -> Grant:  # fmt: skip
    """The GPUs ``peer`` may change.

    Raises:
        AgentRefused: A bad token, or no token where the policy needs one.
    """
    if token:
        job = jobs.authenticate(token, peer.uid, peer.pid, proc)
        return Grant(job.gpus, job)
    if peer.uid == 0:
        return Grant(tuple(range(gpu_count)))
    if config.require_job:
        raise AgentRefused(
            "no job token: only a job's processes may change its GPUs (GREENML_AGENT_TOKEN, "
            "or the token file the job's prolog wrote)"
        )
    allowed = config.users.get(peer.user)
    if not allowed:
        raise AgentRefused(f"user {peer.user} may not change GPUs on this node (agent policy)")
    return Grant(tuple(g for g in allowed if g < gpu_count))


def read_view(
    config: AgentConfig, jobs: JobTable, peer: Peer, token: str | None, gpu_count: int,
    proc: Path = Path("/proc"),
) -> tuple[int, ...]:  # fmt: skip
    """The GPUs a reader sees, in its order: its job's with a valid token, else all."""
    if token:
        try:
            return grant(config, jobs, peer, token, gpu_count, proc).gpus
        except AgentRefused:
            pass
    return tuple(range(gpu_count))


def check_power_limit(
    config: AgentConfig, name: str, watts: float, gpu_min_w: float, gpu_max_w: float
) -> None:
    """Refuse a power limit the policy or the bounds do not allow."""
    if not config.power_limits:
        raise AgentRefused("power limits may not be changed on this node (agent policy)")
    b = config.bounds_for(name)
    low = max(gpu_min_w, b.min_power_w if b.min_power_w is not None else gpu_min_w)
    high = min(gpu_max_w, b.max_power_w if b.max_power_w is not None else gpu_max_w)
    if not low <= watts <= high:
        raise AgentRefused(f"{watts:g} W is outside the allowed {low:g}–{high:g} W for {name}")


def check_clock(config: AgentConfig, name: str, mhz: float, gpu_min: float, gpu_max: float) -> None:
    """Refuse a locked clock the policy or the bounds do not allow."""
    if not config.clocks:
        raise AgentRefused("GPU clocks may not be locked on this node (agent policy)")
    b = config.bounds_for(name)
    low = max(gpu_min, b.min_clock_mhz if b.min_clock_mhz is not None else gpu_min)
    high = min(gpu_max, b.max_clock_mhz if b.max_clock_mhz is not None else gpu_max)
    if not low <= mhz <= high:
        raise AgentRefused(f"{mhz:g} MHz is outside the allowed {low:g}–{high:g} MHz for {name}")

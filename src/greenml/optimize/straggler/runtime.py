"""Straggler-aware GPU power limits, applied while a data-parallel job runs (Perseus).

Each rank of a synchronous data-parallel job (one process per GPU, with
``torch.distributed`` initialized, gloo or nccl) times its own compute per
step: from the step's start to just before the gradient all-reduce, where it
would begin to wait for the others. Every ``sync_every`` steps the ranks
all-gather those times, every rank feeds the same
:class:`~greenml.optimize.straggler.planner.StragglerPlanner` (deterministic, so all
agree without a further message) and each rank sets ITS OWN planned limit on
its own GPU. The original limits come back on :meth:`close`, on an exception
inside :meth:`StragglerPowerController.compute`, at exit and on SIGTERM::

    ctl = StragglerPowerController(curve)   # this rank's GPU: PowerCurve or profiles
    for batch in loader:
        with ctl.compute():                 # forward + backward, no waiting for others
            loss = model(batch)
            loss.backward()
        all_reduce_gradients(model)         # the wait for the slowest rank happens here
        optimizer.step()
    ctl.close()

or ``ctl.begin_step()`` … ``ctl.compute_done()``. What is timed must not include
waiting for other ranks, or every rank measures the slowest one's time. With
``DistributedDataParallel`` the all-reduce overlaps the backward pass, so its
timed backward would include the wait: run the backward under ``model.no_sync()``
and all-reduce the gradients yourself after the timed block. On a GPU the block
ends with ``torch.cuda.synchronize()`` (``synchronize=``), so queued kernels count.

Lazy imports: torch (~1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from greenml.errors import ConfigError
from greenml.optimize.ddp import local_rank, process_group
from greenml.optimize.exit_guard import ExitGuard
from greenml.optimize.gpu_control import GpuControl
from greenml.optimize.objective import LimitProfile
from greenml.optimize.straggler.planner import PowerCurve, StragglerPlan, StragglerPlanner

log = logging.getLogger(__name__)

CurveInput = PowerCurve | Sequence[PowerCurve] | Sequence[LimitProfile]


class StragglerPowerController:
    """Per-step driver of straggler-aware power limits for one rank of a DDP job.

    Args:
        curves: This rank's GPU curve (a :class:`PowerCurve`, or the power-limit
            optimizer's profiles, see :func:`curve_from_optimizer`), or one curve
            per rank of which this rank's is used; ranks tell each other theirs.
        gpu: This rank's CUDA ordinal (default ``LOCAL_RANK``).
        control: Use this GpuControl (one GPU) instead of opening one.
        nvml: A ``pynvml``-compatible module (tests inject a fake).
        state_file: Where the original limits are saved (GREENML_GPU_STATE by default).
        sync_every: Steps between all-gathers of the compute times (K).
        settle_steps: Steps not measured after a change of limits.
        window_steps / replan_threshold / min_margin / step_w / wait_power_w:
            Passed to :class:`StragglerPlanner` (the margin under the critical
            time is the larger of ``min_margin`` and 2.5 × the rank's jitter).
        synchronize: Called before reading the clock at the end of compute
            (default: ``torch.cuda.synchronize`` when CUDA is in use, else nothing).
        clock: Monotonic clock for compute times.

    Raises:
        ConfigError: Not under torch.distributed, bad arguments, or a curve outside
            a rank's GPU range (every rank raises, naming the rank at fault).
        PowerLimitPermissionError: This rank may not set its GPU's limit.
    """

    def __init__(
        self,
        curves: CurveInput,
        *,
        gpu: int | None = None,
        control: GpuControl | None = None,
        nvml: Any | None = None,
        state_file: str | Path | None = None,
        sync_every: int = 4,
        settle_steps: int = 1,
        window_steps: int = 8,
        replan_threshold: float = 0.02,
        min_margin: float = 0.005,
        step_w: float = 5.0,
        wait_power_w: float | None = None,
        synchronize: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        dist = process_group()
        if dist is None:
            raise ConfigError(
                "StragglerPowerController needs torch.distributed: call "
                "torch.distributed.init_process_group() first (one process per GPU); "
                "a single process has no stragglers (use PowerLimitOptimizer)"
            )
        self.rank, self.world = int(dist.get_rank()), int(dist.get_world_size())
        self._sync_every, self._settle = sync_every, settle_steps
        self._synchronize = synchronize or _cuda_synchronize
        self._clock = clock
        self._control: GpuControl | None = None
        self._own_control = control is None
        self._closed = False
        error: Exception | None = None  # every rank learns of every rank's error: none hangs
        curve: PowerCurve | None = None
        try:
            if sync_every < 1 or settle_steps < 0:
                raise ConfigError("sync_every must be >= 1 and settle_steps >= 0")
            curve = _own_curve(curves, self.rank, self.world)
            self._control = control or open_gpu_control(
                [local_rank() if gpu is None else gpu], nvml, state_file
            )
            self._key = _one_key(self._control, gpu)
            _check_range(self._control, self._key, curve)
            self._control.check_permission()
        except Exception as exc:
            error = exc
        mine = (curve.limits_w, curve.time_s, curve.power_w) if curve else None
        gathered: list[Any] = [None] * self.world
        dist.all_gather_object(gathered, (mine, str(error) if error else None))
        failed = [(r, msg) for r, (_, msg) in enumerate(gathered) if msg is not None]
        if failed:
            self._close_control()
            if error is not None:
                raise error
            rank, msg = failed[0]
            raise ConfigError(f"rank {rank} cannot run straggler-aware power limits: {msg}")
        assert curve is not None and self._control is not None
        self.curves = [PowerCurve(*c) for c, _ in gathered]
        self.planner = StragglerPlanner(
            self.curves, window_steps=window_steps, replan_threshold=replan_threshold,
            min_margin=min_margin, step_w=step_w, wait_power_w=wait_power_w,
        )  # fmt: skip
        self.plans: list[dict[str, Any]] = []
        self.steps = 0
        self._buffer: list[float] = []
        self._skip = 0
        self._t0: float | None = None
        self._guard = ExitGuard(self._restore, "restoring GPU power limits")
        self._guard.install()
        try:
            self._set(curve.max_w)  # the planner assumes every rank starts at its highest
        except BaseException:
            self.close()
            raise

    # -- the training loop's calls -------------------------------------------

    @property
    def limit_w(self) -> float:
        """The limit this rank's GPU runs at now (planned, or its curve's highest)."""
        return self.planner.limits_w[self.rank]

    @property
    def replans(self) -> int:
        """Plans made after the first one (the imbalance moved)."""
        return self.planner.replans

    def begin_step(self) -> None:
        """Call when the step's compute starts (before the forward pass)."""
        if self._closed:
            raise ConfigError("this StragglerPowerController is closed")
        self._t0 = self._clock()

    def compute_done(self) -> None:
        """Call just before the gradient all-reduce; every ``sync_every`` steps ranks exchange.

        A collective every ``sync_every`` calls: every rank must call it once per step.
        """
        if self._t0 is None:
            raise ConfigError("compute_done() without begin_step()")
        self._synchronize()
        self._buffer.append(self._clock() - self._t0)
        self._t0 = None
        self.steps += 1
        if len(self._buffer) >= self._sync_every:
            self._exchange()

    @contextmanager
    def compute(self) -> Iterator[None]:
        """``with ctl.compute(): forward_and_backward()``; an exception restores the limits."""
        self.begin_step()
        try:
            yield
        except BaseException:
            self.close()
            raise
        self.compute_done()

    def close(self) -> None:
        """Restore this rank's original limit and release what was opened (not a collective)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._restore()
        finally:
            self._guard.uninstall()
            self._close_control()

    def __enter__(self) -> StragglerPowerController:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def summary(self) -> dict[str, Any]:
        """This rank, the limit in force and every plan (predicted figures are estimates)."""
        return {
            "rank": self.rank,
            "world": self.world,
            "steps": self.steps,
            "limit_w": self.limit_w,
            "replans": self.replans,
            "plans": self.plans,
            "method": "estimated: each rank's curve calibrated by its measured compute time",
        }

    # -- internals -----------------------------------------------------------

    def _exchange(self) -> None:
        """All-gather the buffered compute times; feed the planner; apply a new plan."""
        times = _all_gather(self._buffer)
        first = self.steps - len(self._buffer)
        self._buffer = []
        for k in range(len(times[0])):
            if self._skip > 0:
                self._skip -= 1
                continue
            plan = self.planner.observe([times[r][k] for r in range(self.world)])
            if plan is not None:
                self._apply(plan, first + k + 1)
                return  # later steps of this batch ran at the old limits: not evidence

    def _apply(self, plan: StragglerPlan, step: int) -> None:
        self.plans.append({"step": step, **plan.to_dict()})
        self._skip = self._settle
        if self.rank == 0:
            log.info("greenml: straggler plan at step %d: %s", step, plan.to_dict())
        self._set(plan.limits_w[self.rank])

    def _set(self, limit_w: float) -> None:
        assert self._control is not None
        if self._control.get(self._key).limit_w != limit_w:
            self._control.set_limit(self._key, limit_w)

    def _restore(self) -> None:
        if self._control is not None and self._control.changed:
            restored = self._control.restore()
            log.info("greenml: power limits restored: %s", restored)

    def _close_control(self) -> None:
        if self._own_control and self._control is not None:
            self._control.close()


def curve_from_optimizer(optimizer: Any) -> PowerCurve:
    """This GPU's curve from a finished :class:`PowerLimitOptimizer`'s profiles.

    Its profiles hold the energy of all ranks' GPUs together and the slowest
    rank's time; the power is divided by the number of GPUs (per GPU), the time
    is kept (each rank's measured time calibrates it).

    Raises:
        ConfigError: Fewer than two limits were profiled.
    """
    profiles: list[LimitProfile] = list(optimizer.profiles)
    gpus = int(optimizer.plan.ranks) * len(optimizer.plan.gpus)
    if len(profiles) < 2:
        raise ConfigError("the power-limit optimizer profiled fewer than two limits")
    return PowerCurve.from_profiles(
        [LimitProfile(p.power_limit_w, p.time_s, p.energy_j / gpus) for p in profiles]
    )


def _own_curve(curves: CurveInput, rank: int, world: int) -> PowerCurve:
    if isinstance(curves, PowerCurve):
        curve = curves
    elif curves and all(isinstance(c, PowerCurve) for c in curves):
        if len(curves) != world:
            raise ConfigError(f"{len(curves)} curves given for {world} ranks")
        curve = curves[rank]  # type: ignore[assignment]
    elif curves and all(isinstance(c, LimitProfile) for c in curves):
        curve = PowerCurve.from_profiles(curves)  # type: ignore[arg-type]
    else:
        raise ConfigError("curves: a PowerCurve, one per rank, or a list of LimitProfile")
    if len(curve.limits_w) < 2:
        raise ConfigError("a power curve with one limit leaves nothing to plan")
    return curve


def open_gpu_control(
    gpus: list[int], nvml: Any | None, state_file: str | Path | None
) -> GpuControl:
    """The rank's GPU through NVML; through the node agent for a user who is not root,
    on a node where a greenml agent runs (same interface, the job's GPUs)."""
    if nvml is None and state_file is None:
        from greenml.agent.client import use_agent_for_control

        if use_agent_for_control() is not None:
            from greenml.agent.control import AgentGpuControl

            return cast(GpuControl, AgentGpuControl(gpus, why="straggler controller"))
    return GpuControl(gpus, nvml=nvml, state_file=state_file)


def _one_key(control: GpuControl, gpu: int | None) -> str:
    keys = control.keys if gpu is None else [k for k in control.keys if k == f"gpu{gpu}"]
    if len(keys) != 1:
        raise ConfigError(f"each rank controls one GPU; the control has {control.keys}")
    return keys[0]


def _check_range(control: GpuControl, key: str, curve: PowerCurve) -> None:
    gpu = control.get(key)
    if curve.min_w < gpu.min_w or curve.max_w > gpu.max_w:
        raise ConfigError(
            f"the curve's limits {curve.min_w:g}–{curve.max_w:g} W exceed the range of "
            f"{key} ({gpu.name}): {gpu.allowed}"
        )


def _all_gather(values: list[float]) -> list[list[float]]:
    """Every rank's ``values`` (same length everywhere), in rank order, exact (float64)."""
    import torch

    dist = process_group()
    assert dist is not None
    device = "cpu"
    if dist.get_backend() == "nccl":
        device = f"cuda:{torch.cuda.current_device()}"
    mine = torch.tensor(values, dtype=torch.float64, device=device)
    out = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(out, mine)
    return [[float(v) for v in t.cpu().tolist()] for t in out]


def _cuda_synchronize() -> None:
    """Wait for queued CUDA kernels when this process uses CUDA (torch never imported here)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()

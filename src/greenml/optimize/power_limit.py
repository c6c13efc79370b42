"""Find the GPU power limit that costs least, in the first steps of training (Zeus).

:class:`PowerLimitOptimizer` is driven by the training loop, one call before
and after each step. For each limit, from the highest allowed down to the
lowest in steps of ``step_w``, it sets the limit, lets ``warmup_steps`` pass
and waits until the power settles (thermally steady state, the criterion of
:mod:`greenml.optimize.steady`, stated in each profile), then measures
``profile_steps`` steps: energy with a Meter window over the
tuned GPUs, time with a monotonic clock. It then keeps the limit of least
``η·E + (1 − η)·P_max·T`` (or of least energy within a slowdown) for the rest
of the run, and puts the original limits back on :meth:`close`, on an
exception in a step, at exit and on SIGTERM. Under ``torch.distributed`` all
ranks add their energy and take the longest time before choosing, so every
rank keeps the same limit.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from greenml.errors import ConfigError, PowerLimitPermissionError, SensorUnavailable
from greenml.measure.measurement import Measurement, weakest_method
from greenml.measure.meter import Meter
from greenml.optimize.amd_control import AmdGpuControl
from greenml.optimize.ddp import all_reduce, local_rank, process_group
from greenml.optimize.exit_guard import ExitGuard
from greenml.optimize.gpu_control import GpuControl
from greenml.optimize.objective import LimitProfile, check_eta, pick_power_limit
from greenml.optimize.power_plan import PowerPlan, limits_to_profile
from greenml.optimize.steady import SteadyState

log = logging.getLogger(__name__)

IDLE, WARMUP, PROFILE, DONE, DRY_RUN, CLOSED = (
    "idle", "warmup", "profile", "done", "dry-run", "closed",
)  # fmt: skip


class PowerLimitOptimizer:
    """Profiles power limits over the first steps, then applies and keeps the best.

    Args:
        meter: Measures the tuned GPUs (``gpu0`` ... keys); one is made if None.
        gpus: CUDA ordinals to tune; under torch.distributed ``LOCAL_RANK``'s by default.
        nvml: A ``pynvml``-compatible module (tests inject a fake).
        control: Use this GpuControl (or AmdGpuControl) instead of opening one.
        eta: Weight of energy against time in [0, 1] (Zeus's η).
        max_slowdown: If given (0.05 = 5 %), least energy within that slowdown instead.
        step_w: Watts between profiled limits.
        min_w / max_w: Narrow the profiled range (checked against the GPUs' range).
        warmup_steps: Steps skipped after each change of limit.
        profile_steps: Steps measured per limit.
        dry_run: Set nothing; only :attr:`plan` is meaningful.
        state_file: Where the original limits are saved (GREENML_GPU_STATE by default).
        clock: Monotonic clock for step times.
        settle: The steady-state criterion waited for after the warm-up steps of each
            limit (default :class:`~greenml.optimize.steady.SteadyState`: within 3 %
            over 5 s, at most 60 s); None skips the wait.

    Raises:
        ConfigError: Bad arguments, or a limit outside the GPUs' allowed range.
        PowerLimitPermissionError: Not allowed to set limits (unless ``dry_run``).
    """

    def __init__(
        self,
        meter: Any | None = None,
        *,
        gpus: Sequence[int] | None = None,
        nvml: Any | None = None,
        control: GpuControl | AmdGpuControl | None = None,
        eta: float = 0.5,
        max_slowdown: float | None = None,
        step_w: float = 25.0,
        min_w: float | None = None,
        max_w: float | None = None,
        warmup_steps: int = 3,
        profile_steps: int = 5,
        dry_run: bool = False,
        state_file: str | Path | None = None,
        clock: Callable[[], float] = time.monotonic,
        settle: SteadyState | None = None,
        wait_for_steady: bool = True,
    ) -> None:
        check_eta(eta)
        self._settle = (settle or SteadyState()) if wait_for_steady else None
        self.settling: list[str] = []
        if warmup_steps < 0 or profile_steps < 1:
            raise ConfigError("warmup_steps must be >= 0 and profile_steps >= 1")
        if max_slowdown is not None and not max_slowdown >= 0:
            raise ConfigError(f"the allowed slowdown must be >= 0, not {max_slowdown}")
        dist = process_group()
        if gpus is None and control is None and dist is not None:
            gpus = [local_rank()]
        self._control = control or open_power_control(gpus, nvml=nvml, state_file=state_file)
        self._clock = clock
        self.profiles: list[LimitProfile] = []
        self.chosen: LimitProfile | None = None
        self.energy_method = ""
        self.energy_uncertainty_rel = 0.0
        self._phase = DRY_RUN if dry_run else IDLE
        self._index = -1
        self._count = 0
        self._window: str | None = None
        self._t0 = 0.0
        self._own_meter = meter is None and not dry_run
        self._meter = meter
        self._guard = ExitGuard(self._restore, "restoring GPU power limits")
        try:
            limits = self._control.limits()
            self.plan = PowerPlan(
                tuple(limits), tuple(limits_to_profile(limits, min_w, max_w, step_w)),
                warmup_steps, profile_steps, eta, max_slowdown,
                all_reduce([max(g.max_w for g in limits)], ["max"])[0],
                dist.get_world_size() if dist else 1, dry_run,
            )  # fmt: skip
            if dry_run:
                log.info("greenml: power-limit plan (dry run): %s", self.plan.to_dict())
                return
            self._check_permission_everywhere()
            if self._meter is None:
                self._meter = _own_meter(self._control)
            missing = set(self._control.keys) - {d.key for d in self._meter.devices}
            if missing:
                raise ConfigError(f"the Meter does not measure the tuned GPUs {sorted(missing)}")
        except BaseException:
            self._phase = CLOSED
            if self._own_meter and self._meter is not None:
                self._meter.close()
            self._control.close()
            raise

    # -- the training loop's calls -------------------------------------------

    @property
    def phase(self) -> str:
        """``idle``, ``warmup``, ``profile``, ``done``, ``dry-run`` or ``closed``."""
        return self._phase

    @property
    def current_limit_w(self) -> float | None:
        """The limit being profiled or kept; None before the first step and after close."""
        if self._phase in (WARMUP, PROFILE):
            return self.plan.limits_w[self._index]
        return self.chosen.power_limit_w if self._phase == DONE and self.chosen else None

    def on_step_begin(self) -> None:
        """Call before each training step."""
        if self._phase == IDLE:
            self._guard.install()
            self._enter(0)
        if self._phase == PROFILE and self._window is None:
            assert self._meter is not None
            self._window = f"greenml.power_limit.{self.plan.limits_w[self._index]:g}W"
            self._meter.begin_window(self._window)
            self._t0 = self._clock()

    def on_step_end(self) -> None:
        """Call after each training step."""
        if self._phase == WARMUP:
            self._count += 1
            if self._count >= self.plan.warmup_steps and self._steady():
                self._phase, self._count = PROFILE, 0
        elif self._phase == PROFILE and self._window is not None:
            self._count += 1
            if self._count >= self.plan.profile_steps:
                self._finish_profile()

    @contextmanager
    def step(self) -> Iterator[None]:
        """``with opt.step(): train_one_step()``; an exception restores the limits."""
        self.on_step_begin()
        try:
            yield
        except BaseException:
            self.close()
            raise
        self.on_step_end()

    def close(self) -> None:
        """Restore the original limits and release what the optimizer opened."""
        if self._phase == CLOSED:
            return
        if self._window is not None and self._meter is not None:
            self._meter.end_window(self._window)
            self._window = None
        self._phase = CLOSED
        try:
            self._restore()
        finally:
            self._guard.uninstall()
            if self._own_meter and self._meter is not None:
                self._meter.close()
            self._control.close()

    def __enter__(self) -> PowerLimitOptimizer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def summary(self) -> dict[str, Any]:
        """The plan, every profile and the choice, for logs and JSON."""
        return {
            "phase": self._phase,
            "plan": self.plan.to_dict(),
            "profiles": [_profile_dict(p) for p in self.profiles],
            "chosen_limit_w": self.chosen.power_limit_w if self.chosen else None,
            "energy_method": self.energy_method,
            "energy_uncertainty_rel": self.energy_uncertainty_rel,
            "steady_state": {"criterion": self._settle.criterion if self._settle else "none",
                             "per_limit": list(self.settling)},
        }

    # -- internals -----------------------------------------------------------

    def _check_permission_everywhere(self) -> None:
        """Every rank learns whether every rank may set limits, so none waits forever."""
        try:
            self._control.check_permission()
        except Exception:
            all_reduce([0.0], ["min"])
            raise
        if all_reduce([1.0], ["min"])[0] < 1.0:
            raise PowerLimitPermissionError(
                "another rank may not set its GPU's power limit (see its error); "
                "every rank needs root or CAP_SYS_ADMIN"
            )

    def _steady(self) -> bool:
        """Whether the power has settled at this limit (always, without a criterion)."""
        if self._settle is None or self._meter is None:
            return True
        done = self._settle.add(self._clock(), self._meter.current_power_w())
        if done:
            self.settling.append(f"{self.plan.limits_w[self._index]:g} W: {self._settle.outcome}")
        return done

    def _enter(self, index: int) -> None:
        self._index, self._count = index, 0
        self._control.set_all(self.plan.limits_w[index])
        if self._settle is not None:
            self._settle.reset()
        waits = self.plan.warmup_steps > 0 or self._settle is not None
        self._phase = WARMUP if waits else PROFILE

    def _finish_profile(self) -> None:
        assert self._meter is not None and self._window is not None
        m = self._meter.end_window(self._window)
        elapsed_s = self._clock() - self._t0
        self._window = None
        energy_j = self._gpu_energy_j(m)
        energy_j, elapsed_s = all_reduce([energy_j, elapsed_s], ["sum", "max"])
        steps = self.plan.profile_steps
        limit_w = self.plan.limits_w[self._index]
        self.profiles.append(LimitProfile(limit_w, elapsed_s / steps, energy_j / steps))
        last = self._index + 1 >= len(self.plan.limits_w)
        if last or self._too_slow():
            self._choose()
        else:
            self._enter(self._index + 1)

    def _gpu_energy_j(self, m: Measurement) -> float:
        devices = m.components["gpu"].devices
        tuned = [devices[key] for key in self._control.keys]
        self.energy_method = weakest_method([self.energy_method or "counter"] +
                                            [d.method for d in tuned])  # fmt: skip
        rel = max(d.uncertainty_rel for d in tuned)
        self.energy_uncertainty_rel = max(self.energy_uncertainty_rel, rel)
        return sum(d.energy_j for d in tuned)

    def _too_slow(self) -> bool:
        """With a slowdown bound, lower limits only get slower: stop once past it."""
        if self.plan.max_slowdown is None:
            return False
        fastest_s = min(p.time_s for p in self.profiles)
        return self.profiles[-1].time_s > fastest_s * (1.0 + self.plan.max_slowdown)

    def _choose(self) -> None:
        plan = self.plan
        self.chosen = pick_power_limit(self.profiles, plan.eta, plan.max_power_w, plan.max_slowdown)
        self._control.set_all(self.chosen.power_limit_w)
        self._phase = DONE
        log.info(
            "greenml: power limit %g W kept (%s) after profiling %s",
            self.chosen.power_limit_w, plan.objective,
            ", ".join(f"{p.power_limit_w:g} W" for p in self.profiles),
        )  # fmt: skip

    def _restore(self) -> None:
        if self._control.changed:
            restored = self._control.restore()
            log.info("greenml: power limits restored: %s", restored)


def _profile_dict(p: LimitProfile) -> dict[str, float]:
    return {"power_limit_w": p.power_limit_w, "time_s": p.time_s, "energy_j": p.energy_j,
            "power_w": p.power_w}  # fmt: skip


def open_power_control(
    gpus: Sequence[int] | None, *, nvml: Any | None = None, state_file: str | Path | None = None,
    hold: str = "connection", why: str = "power-limit optimizer",
) -> GpuControl | AmdGpuControl:  # fmt: skip
    """NVIDIA GPUs' power limits through NVML, else AMD GPUs' power caps through AMD SMI.

    A user who is not root, on a node with a greenml agent, goes through the agent
    (its job's GPUs; ``hold`` says until when the agent keeps a change: ``connection``
    or ``job``; ``why`` goes into its audit log).

    Raises:
        SensorUnavailable: Neither library can open the GPUs (NVML's reason).
        PowerLimitPermissionError: The agent refused this user.
    """
    if nvml is None and state_file is None:
        from greenml.agent.client import use_agent_for_control

        if use_agent_for_control() is not None:
            from greenml.agent.control import AgentGpuControl

            return AgentGpuControl(gpus, hold=hold, why=why)  # type: ignore[return-value]
    try:
        return GpuControl(gpus, nvml=nvml, state_file=state_file)
    except SensorUnavailable as nvml_error:
        if nvml is not None:
            raise
        try:
            return AmdGpuControl(gpus, state_file=state_file)
        except SensorUnavailable:
            raise nvml_error from None


def _own_meter(control: GpuControl | AmdGpuControl) -> Any:
    """A Meter over the tuned GPUs only (10 Hz when one has no energy counter)."""
    sensor = control.sensor()
    counters = all(d.has_counter for d in sensor.devices)
    return Meter(sensors=[sensor], sample_hz=0.0 if counters else 10.0)

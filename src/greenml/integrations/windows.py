"""What every framework callback does: step and epoch windows, and the optimizer.

:class:`TrainingWindows` opens a Meter window named ``step`` around each
training step and ``epoch`` around each epoch, keeps the measurements, and
drives a :class:`~greenml.optimize.power_limit.PowerLimitOptimizer` from the
same step boundaries. Inside a ``greenml.Run`` (or with ``log_to=[...]``, which
starts one) the windows are measured on the run's Meter, the epochs are stored
with the run and logged to its trackers, and :meth:`TrainingWindows.framework_logs`
gives ``greenml/energy_kwh`` and ``greenml/co2_kg`` (the training so far) for the
framework's own logs. :class:`WindowsCallback` is what the callbacks share
(their arguments, :attr:`~WindowsCallback.measurements`,
:attr:`~WindowsCallback.optimizer`, :meth:`~WindowsCallback.close`); each
callback only translates its framework's hooks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from greenml.measure.flops import FlopSampler
from greenml.measure.measurement import Measurement
from greenml.measure.meter import Meter
from greenml.optimize.power_limit import PowerLimitOptimizer

STEP, EPOCH = "step", "epoch"


class TrainingWindows:
    """Step and epoch windows on a Meter, plus an optional power-limit optimizer.

    The arguments (and their defaults) are :class:`WindowsCallback`'s.
    """

    def __init__(
        self, meter: Any | None, power_limit: Any, keep_steps: int, sync_execution: bool,
        log_to: Sequence[Any] = (), run: Any | None = None, run_name: str | None = None,
        flops: Any = False,
    ) -> None:  # fmt: skip
        self.meter = meter
        self.run = run
        self.energy_kwh = 0.0  # the epochs so far
        self.co2_kg: float | None = None
        self._log_to, self._run_name = list(log_to), run_name
        self._own_run = False
        self.flops = _flop_sampler(flops)
        self.optimizer: Any | None = None
        self.measurements: list[Measurement] = []
        self.steps_measured = 0
        self.step_energy_j = 0.0
        self._power_limit = power_limit
        self._keep_steps = keep_steps
        self._sync = sync_execution
        self._own_meter = meter is None
        self._open: set[str] = set()
        self._started = False

    @property
    def steps(self) -> list[Measurement]:
        return [m for m in self.measurements if m.name == STEP]

    @property
    def epochs(self) -> list[Measurement]:
        return [m for m in self.measurements if m.name == EPOCH]

    def start(self) -> None:
        """Open the Meter and the optimizer (once)."""
        if self._started:
            return
        self._started = True
        self._join_run()
        if self.meter is None:
            self.meter = Meter()
        self.optimizer = self._make_optimizer()

    def step_begin(self) -> None:
        self.start()
        if self.optimizer is not None:
            self.optimizer.on_step_begin()
        self._begin(STEP)
        if self.flops is not None:
            self.flops.step_begin()

    def step_end(self, samples: float | None = None) -> None:
        if self.flops is not None:
            self.flops.step_end(samples=samples)
        m = self._end(STEP)
        if m is not None:
            self.steps_measured += 1
            self.step_energy_j += m.total_j
            if self.steps_measured <= self._keep_steps:
                self.measurements.append(m)
        if self.optimizer is not None:
            self.optimizer.on_step_end()

    def epoch_begin(self) -> None:
        self.start()
        self._begin(EPOCH)

    def epoch_end(self) -> None:
        m = self._end(EPOCH)
        if m is not None:
            self.measurements.append(m)
            self.energy_kwh += m.total_kwh
            if self.run is not None:
                self.run.add_window(m)
                kg = self.run.carbon_kg(m)
                if kg is not None:
                    self.co2_kg = (self.co2_kg or 0.0) + kg

    def framework_logs(self) -> dict[str, float]:
        """``greenml/energy_kwh`` and (when known) ``greenml/co2_kg`` of the epochs so far."""
        logs = {"greenml/energy_kwh": self.energy_kwh}
        if self.co2_kg is not None:
            logs["greenml/co2_kg"] = self.co2_kg
        return logs

    def _join_run(self) -> None:
        """Use the open greenml.Run (or start one for ``log_to``): its Meter, store, trackers."""
        from greenml.run.inprocess import Run, current_run

        run = self.run or current_run()
        if run is None and self._log_to:
            run = Run(self._run_name, log_to=self._log_to).start()
            self._own_run = True
        self.run = run
        if run is not None and self.meter is None and run.meter is not None:
            self.meter = run.meter
            self._own_meter = False

    def stop(self) -> None:
        """Close open windows, restore the GPUs' limits, close a Meter we opened."""
        if not self._started:
            return
        self._started = False
        if self.flops is not None:
            self.flops.step_abort()  # a step left open by a failure is not counted
            self.flops.publish()  # to ``greenml run``, if it runs this program
        for name in list(self._open):
            self._end(name)
        try:
            if self.optimizer is not None:
                self.optimizer.close()
        finally:
            if self._own_meter and self.meter is not None:
                self.meter.close()
                self.meter = None
            if self._own_run and self.run is not None:
                self.run.stop()
                self._own_run = False

    def _make_optimizer(self) -> Any | None:
        spec = self._power_limit
        if spec is False or spec is None:
            return None

        if isinstance(spec, PowerLimitOptimizer):
            return spec
        options = dict(spec) if isinstance(spec, Mapping) else {}
        return PowerLimitOptimizer(self.meter, **options)

    def _begin(self, name: str) -> None:
        assert self.meter is not None
        if name in self._open:  # a hook without its end (an interrupted step): start over
            self.meter.end_window(name, self._sync)
        self.meter.begin_window(name, self._sync)
        self._open.add(name)

    def _end(self, name: str) -> Measurement | None:
        if name not in self._open or self.meter is None:
            return None
        self._open.discard(name)
        measurement: Measurement = self.meter.end_window(name, self._sync)
        return measurement


def _flop_sampler(flops: Any) -> FlopSampler | None:
    """``flops``: False/None (no counting), True (every 100th step), N (every N-th) or a
    :class:`~greenml.measure.flops.FlopSampler`."""
    if flops is None or flops is False:
        return None
    if isinstance(flops, FlopSampler):
        return flops
    return FlopSampler() if flops is True else FlopSampler(every=flops)


class WindowsCallback:
    """The framework-independent half of a greenml training callback (a mixin).

    The callbacks keep a :class:`TrainingWindows` in :attr:`windows` and call
    it from their framework's hooks.

    Args:
        meter: The Meter to use; one over this machine's sensors when None.
        power_limit: A PowerLimitOptimizer, True (one with defaults on this
            Meter), a mapping of its keyword arguments, or False for none.
        keep_steps: Step windows kept in :attr:`measurements` (the oldest are
            kept; every step still counts in ``windows.steps_measured`` and
            ``windows.step_energy_j``).
        sync_execution: Wait for pending CUDA work at each window boundary.
        log_to: Trackers (``"mlflow"``, ``"wandb"``, ``"tensorboard"``): a ``greenml.Run``
            is started for training (unless one is open) and logs the epochs to them.
        run: The ``greenml.Run`` to join; the innermost open one by default.
        run_name: Name of the run started for ``log_to``.
        flops: Count FLOPs on sampled steps: True (every 100th), N (every N-th)
            or a FlopSampler; :attr:`flops` then gives FLOPs and MFU.
    """

    def __init__(
        self,
        meter: Any | None = None,
        power_limit: Any = False,
        keep_steps: int = 10_000,
        sync_execution: bool = True,
        log_to: Sequence[Any] = (),
        run: Any | None = None,
        run_name: str | None = None,
        flops: Any = False,
    ) -> None:
        super().__init__()
        self.windows = TrainingWindows(
            meter, power_limit, keep_steps, sync_execution, log_to, run, run_name, flops
        )

    @property
    def measurements(self) -> list[Measurement]:
        """Finished windows in order (``m.name`` is ``step`` or ``epoch``)."""
        return self.windows.measurements

    @property
    def optimizer(self) -> Any | None:
        """The PowerLimitOptimizer once training started, else None."""
        return self.windows.optimizer

    @property
    def flops(self) -> dict[str, Any] | None:
        """FLOPs counted so far (:meth:`FlopSampler.totals`); None without ``flops=``."""
        return None if self.windows.flops is None else self.windows.flops.totals()

    def close(self) -> None:
        """Close open windows and restore the power limits (safe to call twice)."""
        self.windows.stop()

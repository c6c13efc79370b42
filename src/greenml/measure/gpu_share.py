"""One GPU's energy shared among the processes on it by what each did.

A GPU's energy counter covers the whole board. When several processes (pods,
ranks, notebooks) share it by time-slicing, greenml splits each window's energy
by the processes' SM activity instead of equally (the rule Kepler adopted; DCGM
exporter users report every pod getting identical power, dcgm-exporter #582/#587):

1. **idle kept apart:** ``idle_j = idle_w × duration`` (at most the window's
   energy) is the board's idle draw, reported on its own, never spread; the idle
   power is given, or learned as the lowest average power of a window in which no
   process ran a kernel (until then nothing is set apart, and the split says so);
2. **active energy by SM activity:** the rest is shared in proportion to each
   process's summed SM utilization over the window, from NVML's per-process
   samples (``nvmlDeviceGetProcessUtilization``: the share of each sample period a
   kernel of that process ran on the SMs; equal sample periods, so the sum is
   proportional to SM-time);
3. **no samples:** processes present but without samples (a driver without
   process accounting, a window shorter than the sample period) share the active
   energy equally, and the split's ``method`` says ``equal``.

What it cannot see: two processes that keep the SMs equally busy but draw
different power per unit of activity (memory-bound vs compute-bound kernels)
get equal shares; ``benchmarks/gpu_share_attribution.py`` states the error.

MIG instances are separate GPUs to the scheduler but share the board's counter:
:class:`MigActivity` weighs each instance by its own SM activity from GPM
(``nvmlGpmMigSampleGet``, Hopper and newer); where NVML exposes no per-instance
activity the board is measured whole and the split's method says so.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("greenml")

SM_ACTIVITY = "sm-activity"
EQUAL = "equal (no SM activity samples for the processes present)"
NO_PROCESS = "none (no process on the GPU)"
MIG_WHOLE = "whole GPU (MIG instances without per-instance activity in NVML)"


@dataclass(frozen=True)
class Split:
    """One window's energy shared out.

    Attributes:
        shares_j: Joules per process (or MIG instance) key.
        idle_j: The idle draw of the window, kept apart.
        unattributed_j: Energy no process was there to take.
        method: How the active energy was shared (``SM_ACTIVITY``, ``EQUAL`` …).
        idle_basis: Where the idle power came from, or why none was set apart.
    """

    shares_j: dict[Any, float]
    idle_j: float
    unattributed_j: float
    method: str
    idle_basis: str = ""


def split_energy(
    energy_j: float,
    duration_s: float,
    activity: Mapping[Any, float] | None,
    present: Iterable[Any],
    idle_w: float | None = None,
) -> Split:
    """Share ``energy_j`` of a window among ``present`` processes by ``activity``.

    Args:
        energy_j: The GPU's energy over the window.
        duration_s: The window's length.
        activity: Summed SM utilization per key over the window (any unit; only
            ratios matter); None when the GPU gives no process samples.
        present: The keys on the GPU (e.g. compute processes at the window's end);
            a key with activity counts as present.
        idle_w: The board's idle power, kept apart; None: nothing set apart.
    """
    energy_j = max(0.0, energy_j)
    idle_j = 0.0 if idle_w is None else min(energy_j, max(0.0, idle_w) * max(0.0, duration_s))
    basis = "" if idle_w is not None else "idle power not known yet: inside the shares"
    active_j = energy_j - idle_j
    weights = {k: float(v) for k, v in (activity or {}).items() if v > 0}
    keys = set(present) | set(weights)
    if not keys:
        return Split({}, idle_j, active_j, NO_PROCESS, basis)
    total = sum(weights.values())
    if total > 0:
        shares = {k: active_j * (weights.get(k, 0.0) / total) for k in keys}  # ratio first:
        # tiny weights (5e-324) would round when multiplied by the energy first
        return Split(shares, idle_j, 0.0, SM_ACTIVITY, basis)
    return Split({k: active_j / len(keys) for k in keys}, idle_j, 0.0, EQUAL, basis)


@dataclass
class ProcessActivity:
    """Summed SM utilization per process id since the last read, from NVML's samples.

    ``supported`` turns False when the driver refuses process utilization
    (``NotSupported``: older GPUs, MIG mode); reads then return None.
    """

    nvml: Any
    handle: Any
    supported: bool = True
    _last_us: int = 0

    def read(self) -> dict[int, float] | None:
        """{pid: Σ smUtil %} of the samples newer than the last read; {} when none."""
        if not self.supported:
            return None
        nvml = self.nvml
        get = getattr(nvml, "nvmlDeviceGetProcessUtilization", None)
        if get is None:  # a pynvml without it
            self.supported = False
            return None
        try:
            samples = get(self.handle, self._last_us)
        except nvml.NVMLError as exc:
            if isinstance(exc, nvml.NVMLError_NotFound):  # no sample since then: no kernel ran
                return {}
            if isinstance(exc, nvml.NVMLError_NotSupported):
                self.supported = False
            log.debug("greenml: process utilization not read: %s", exc)
            return None
        sums: dict[int, float] = {}
        for s in samples:
            stamp = int(s.timeStamp)
            if stamp <= self._last_us:
                continue
            sums[int(s.pid)] = sums.get(int(s.pid), 0.0) + float(s.smUtil)
        self._last_us = max([self._last_us, *(int(s.timeStamp) for s in samples)])
        return sums


@dataclass
class MigActivity:
    """Mean SM utilization per MIG GPU instance between two reads, from GPM (Hopper+)."""

    nvml: Any
    handle: Any
    supported: bool = True
    _samples: dict[int, Any] = field(default_factory=dict)

    def read(self, instances: Iterable[int]) -> dict[int, float] | None:
        """{GPU instance id: SM util %} since the last read (None: not available)."""
        if not self.supported:
            return None
        nvml = self.nvml
        out: dict[int, float] = {}
        try:
            for gi in sorted(set(instances)):
                sample = nvml.nvmlGpmMigSampleGet(self.handle, gi, nvml.nvmlGpmSampleAlloc())
                before = self._samples.get(gi)
                self._samples[gi] = sample
                if before is None:
                    continue
                out[gi] = _gpm_sm_util(nvml, before, sample)
                nvml.nvmlGpmSampleFree(before)
        except (nvml.NVMLError, AttributeError) as exc:  # AttributeError: an older pynvml
            self.supported = False
            log.debug("greenml: GPM per MIG instance not read: %s", exc)
            return None
        return out


def _gpm_sm_util(nvml: Any, first: Any, second: Any) -> float:
    request = nvml.c_nvmlGpmMetricsGet_t()
    request.version = nvml.NVML_GPM_METRICS_GET_VERSION
    request.numMetrics = 1
    request.sample1, request.sample2 = first, second
    request.metrics[0].metricId = nvml.NVML_GPM_METRIC_SM_UTIL
    nvml.nvmlGpmMetricsGet(request)
    return float(request.metrics[0].value)


@dataclass
class GpuShare:
    """One GPU's windows shared out, with its idle power given or learned.

    Args:
        nvml: The ``pynvml`` module (or a fake).
        handle: The GPU's NVML handle.
        idle_w: The board's idle power if known (e.g. measured with no job).
    """

    nvml: Any
    handle: Any
    idle_w: float | None = None
    learned_idle_w: float | None = None
    processes: ProcessActivity = field(init=False)

    def __post_init__(self) -> None:
        self.processes = ProcessActivity(self.nvml, self.handle)

    def split(self, energy_j: float, duration_s: float, present: Iterable[int]) -> Split:
        """Share one window's energy among the process ids ``present`` and those sampled."""
        activity = self.processes.read()
        quiet = activity is not None and not any(v > 0 for v in activity.values())
        if quiet and duration_s >= 1.0:
            power = energy_j / duration_s  # nothing ran: this window is the idle draw
            if self.learned_idle_w is None or power < self.learned_idle_w:
                self.learned_idle_w = power
        idle, basis = self.idle_power()
        done = split_energy(energy_j, duration_s, activity, present, idle)
        return Split(done.shares_j, done.idle_j, done.unattributed_j, done.method,
                     basis or done.idle_basis)  # fmt: skip

    def idle_power(self) -> tuple[float | None, str]:
        """The idle power kept apart and where it comes from."""
        if self.idle_w is not None:
            return self.idle_w, "given"
        if self.learned_idle_w is not None:
            return self.learned_idle_w, "lowest power of a window with no kernel running"
        return None, ""

"""A GPU shared by several processes, for the fake NVML: per-process SM activity traces,
NVML's per-process utilization samples, and GPM per MIG instance.

Each process follows a piecewise-constant trace of its SM utilization (the share of
time a kernel of it runs on the SMs; under time-slicing the shares of the processes
add up to at most 1). The board draws ``idle_w`` plus, per process, its ``dynamic_w``
(power at full SM use) × its utilization: :func:`shared_gpu` writes that as the GPU's
power trace, so the energy counter, power and GPU-Util of :class:`FakeNvml` follow.

``nvmlDeviceGetProcessUtilization(handle, lastSeenTimeStamp)`` returns, as the driver
does, one sample per process that ran in each sample period (``sample_period_s``,
1/6 s by default: an assumption, the driver's period is not documented) newer than
``lastSeenTimeStamp`` (µs), from a ring buffer of ``buffer`` periods; ``smUtil`` is an
integer percentage (the exact mean over the period, rounded); no sample raises
NotFound. In MIG mode the call is NotSupported (as on real drivers); per-instance
activity comes from ``nvmlGpmMigSampleGet`` where the GPU has GPM.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any

from tests.fakes.fake_pynvml import FakeGpuSpec, FakeNvml, Phase, _fail, _GpmSample, _Handle

NONE_ID = 0xFFFFFFFF


@dataclass(frozen=True)
class ProcPhase:
    """From ``start_s`` on, the process keeps the SMs busy ``sm_util`` (0–1) of the time."""

    start_s: float
    sm_util: float


@dataclass(frozen=True)
class SharedProcess:
    """A process on a shared GPU: its pid, power at full SM use, trace and MIG instance."""

    pid: int
    dynamic_w: float
    trace: Sequence[ProcPhase]
    memory_bytes: int = 2**30
    gpu_instance: int | None = None

    def util_at(self, t: float) -> float:
        current = 0.0
        for phase in self.trace:
            if phase.start_s <= t:
                current = phase.sm_util
        return current

    def integral(self, t0: float, t1: float) -> float:
        """Exact ∫ sm_util dt over [t0, t1]."""
        starts = [p.start_s for p in self.trace]
        total = 0.0
        for i, phase in enumerate(self.trace):
            end = starts[i + 1] if i + 1 < len(starts) else math.inf
            lo, hi = max(t0, phase.start_s), min(t1, end)
            if hi > lo:
                total += phase.sm_util * (hi - lo)
        return total


def shared_gpu(base: FakeGpuSpec, idle_w: float, processes: Sequence[SharedProcess]) -> FakeGpuSpec:
    """``base`` with the power trace the processes make: idle + Σ dynamic_w × sm_util."""
    starts = sorted({0.0, *(p.start_s for proc in processes for p in proc.trace)})
    phases = []
    for t in starts:
        utils = [(proc, proc.util_at(t)) for proc in processes]
        busy = min(1.0, sum(u for _, u in utils))
        power = idle_w + sum(proc.dynamic_w * u for proc, u in utils)
        phases.append(Phase(t, power, utilization=busy, sm_activity=busy))
    return replace(base, trace=tuple(phases))


class SharedFakeNvml(FakeNvml):
    """:class:`FakeNvml` whose GPU ``i`` is shared by ``shared[i]``'s processes."""

    def __init__(
        self, gpus: Sequence[FakeGpuSpec], shared: Mapping[int, Sequence[SharedProcess]], *,
        sample_period_s: float = 1 / 6, buffer: int = 100, **kw: Any,
    ) -> None:  # fmt: skip
        super().__init__(gpus, **kw)
        self.shared = {i: list(procs) for i, procs in shared.items()}
        self.sample_period_s = sample_period_s
        self.buffer = buffer
        for i, procs in self.shared.items():
            self.gpus[i].processes = [(p.pid, p.memory_bytes) for p in procs]

    def nvmlDeviceGetComputeRunningProcesses(self, h: _Handle) -> list[SimpleNamespace]:
        gpu = self._gpu(h, "nvmlDeviceGetComputeRunningProcesses")
        instance = {p.pid: p.gpu_instance for p in self.shared.get(h.index, [])}
        return [SimpleNamespace(pid=pid, usedGpuMemory=mem,
                                gpuInstanceId=NONE_ID if instance.get(pid) is None
                                else instance[pid], computeInstanceId=NONE_ID if
                                instance.get(pid) is None else 0)
                for pid, mem in gpu.processes]  # fmt: skip

    def nvmlDeviceGetProcessUtilization(self, h: _Handle, last_seen_us: int) -> list[Any]:
        spec = self._gpu(h, "nvmlDeviceGetProcessUtilization")
        if spec.mig_mode:
            raise _fail("NotSupported")
        period, now = self.sample_period_s, self.clock()
        last_k = math.floor(now / period + 1e-9)
        first_k = max(1, last_k - self.buffer + 1, math.floor(last_seen_us / 1e6 / period) + 1)
        out = []
        for k in range(first_k, last_k + 1):
            t1 = k * period
            stamp = round(t1 * 1e6)
            if stamp <= last_seen_us:
                continue
            for proc in self.shared.get(h.index, []):
                util = proc.integral(t1 - period, t1) / period
                if util > 0:
                    out.append(SimpleNamespace(pid=proc.pid, timeStamp=stamp,
                                               smUtil=round(util * 100), memUtil=0,
                                               encUtil=0, decUtil=0))  # fmt: skip
        if not out:
            raise _fail("NotFound")
        return out

    def nvmlGpmMigSampleGet(
        self, h: _Handle, gpu_instance: int, sample: _GpmSample
    ) -> _GpmSample:
        spec = self._gpu(h, "nvmlGpmMigSampleGet")
        if not spec.gpm or not spec.mig_mode or sample.freed:
            raise _fail("NotSupported" if not (spec.gpm and spec.mig_mode) else "InvalidArgument")
        sample.index, sample.time_s = h.index, self.clock()
        sample.instance = gpu_instance  # type: ignore[attr-defined]
        return sample

    def nvmlGpmMetricsGet(self, request: Any) -> Any:
        s1, s2 = request.sample1, request.sample2
        gi = getattr(s1, "instance", None)
        if gi is None:
            return super().nvmlGpmMetricsGet(request)
        if getattr(s2, "instance", None) != gi or not s2.time_s > s1.time_s:
            raise _fail("InvalidArgument")
        procs = [p for p in self.shared.get(s1.index, []) if p.gpu_instance == gi]
        mean = sum(p.integral(s1.time_s, s2.time_s) for p in procs) / (s2.time_s - s1.time_s)
        for metric in request.metrics[: request.numMetrics]:
            metric.nvmlReturn, metric.value = 0, min(1.0, mean) * 100.0
        return request

"""A fake ``pynvml`` module with realistic behaviour, driven by an injectable clock.

Each GPU follows a piecewise-constant trace of :class:`Phase` s. Time 0 on the
clock is when the driver loaded: the energy counter (integer mJ) is the exact
integral of the trace since then, power is the current phase's (integer mW),
and GPM SM activity is the exact average between two samples. Function names,
constants, return shapes and error classes follow nvidia-ml-py.

A GPU given a ``limit_curve`` instead runs a training job without pause: its
power and step time follow the curve at the power limit in force (interpolated
between rows, as measured on a V100 in the Zeus traces), and the energy counter
integrates that power over the history of limits. Limits are set with
``nvmlDeviceSetPowerManagementLimit``: out of range is InvalidArgument and an
unprivileged caller gets NoPermission, as from the real library. With a
``state_path`` the limits live in a JSON file, so several processes (a training
process and a later ``greenml gpu restore``) see the same GPU. Such a GPU may
also :meth:`FakeNvml.wait` at a collective, drawing its ``wait_power_w`` meanwhile.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tests.helpers import ManualClock

NVML_SUCCESS = 0
# name of the NVMLError_* class: (code, message), as in pynvml
_ERROR_CODES = {
    "Uninitialized": (1, "Uninitialized"),
    "InvalidArgument": (2, "Invalid Argument"),
    "NotSupported": (3, "Not Supported"),
    "NoPermission": (4, "Insufficient Permissions"),
    "NotFound": (6, "Not Found"),
    "DriverNotLoaded": (9, "Driver Not Loaded"),
    "LibraryNotFound": (12, "NVML Shared Library Not Found"),
    "FunctionNotFound": (13, "Function Not Found"),
    "GpuIsLost": (15, "GPU is lost"),
    "Unknown": (999, "Unknown Error"),
}
_MESSAGES = dict(_ERROR_CODES.values())


_BY_CODE: dict[int, type[NVMLError]] = {}


class NVMLError(Exception):
    """Like pynvml's: ``NVMLError(code)`` builds the subclass for that code."""

    value: int

    def __new__(cls, value: int) -> NVMLError:
        cls = _BY_CODE.get(value, cls) if cls is NVMLError else cls
        obj = Exception.__new__(cls)
        obj.value = value
        return obj

    def __str__(self) -> str:
        return _MESSAGES.get(self.value, f"NVML Error with code {self.value}")


def _error_class(name: str, code: int) -> type[NVMLError]:
    def new(cls: type[NVMLError], *args: Any) -> NVMLError:
        return NVMLError.__new__(cls, code)

    cls = type(f"NVMLError_{name}", (NVMLError,), {"__new__": new})
    _BY_CODE[code] = cls
    return cls


ERRORS = {name: _error_class(name, code) for name, (code, _) in _ERROR_CODES.items()}


def _fail(name: str) -> NVMLError:
    return NVMLError(_ERROR_CODES[name][0])


@dataclass(frozen=True)
class Phase:
    """From ``start_s`` on, until the next phase, the GPU draws ``power_w``.

    ``utilization`` is the fraction of time a kernel ran (nvidia-smi GPU-Util);
    ``sm_activity`` the fraction of SMs busy (GPM), at most ``utilization``.
    """

    start_s: float
    power_w: float
    utilization: float = 0.0
    sm_activity: float = 0.0
    memory_utilization: float = 0.0
    sm_occupancy: float = 0.0


@dataclass
class FakeGpuSpec:
    """One physical GPU.

    ``errors`` maps an NVML function name to the error it raises on this GPU
    (``"NotSupported"`` for a missing feature, ``"Unknown"`` for a glitch);
    tests may change it mid-run. From ``lost_at_s`` on every call raises GpuIsLost.
    """

    name: str
    uuid: str
    trace: Sequence[Phase] = (Phase(0.0, 60.0),)
    memory_total_bytes: int = 80 * 2**30
    memory_used_bytes: int = 2**30
    sm_clock_mhz: int = 1410
    power_limit_w: float = 400.0
    default_power_limit_w: float = 400.0
    power_limit_range_w: tuple[float, float] = (100.0, 400.0)
    gpm: bool = False
    mig_mode: int = 0
    lost_at_s: float | None = None
    errors: dict[str, str] = field(default_factory=dict)
    # (power limit W, power W, step time s) rows, limits ascending: a busy GPU
    limit_curve: Sequence[tuple[float, float, float]] = ()
    # power while a curve-driven GPU waits for the other ranks at a collective
    wait_power_w: float | None = None
    # step time multiplier of a curve-driven GPU: a straggler (throttling, a slow host)
    slowdown: float = 1.0
    # (pid, used GPU memory bytes) of the compute processes on the GPU; tests change it
    processes: list[tuple[int, int]] = field(default_factory=list)

    def curve_at(self, limit_w: float) -> tuple[float, float]:
        """(power W, step time s) of ``limit_curve`` at ``limit_w``, linear between rows."""
        rows = sorted(self.limit_curve)
        if limit_w <= rows[0][0]:
            return rows[0][1], rows[0][2]
        for (l0, p0, t0), (l1, p1, t1) in itertools.pairwise(rows):
            if limit_w <= l1:
                a = (limit_w - l0) / (l1 - l0)
                return p0 + a * (p1 - p0), t0 + a * (t1 - t0)
        return rows[-1][1], rows[-1][2]

    def phase_at(self, t: float) -> Phase:
        current = self.trace[0]
        for phase in self.trace:
            if phase.start_s <= t:
                current = phase
        return current

    def integral(self, attr: str, t0: float, t1: float) -> float:
        """Exact integral of ``attr`` (e.g. ``power_w``) over [t0, t1]."""
        starts = [-math.inf] + [p.start_s for p in self.trace[1:]]  # first phase: since ever
        ends = [*starts[1:], math.inf]
        total = 0.0
        for phase, start, end in zip(self.trace, starts, ends, strict=True):
            lo, hi = max(t0, start), min(t1, end)
            if hi > lo:
                total += getattr(phase, attr) * (hi - lo)
        return total


def h100(uuid: str = "GPU-h100-0000", **kw: Any) -> FakeGpuSpec:
    """An H100 SXM: energy counter and GPM."""
    spec = FakeGpuSpec("NVIDIA H100 80GB HBM3", uuid, sm_clock_mhz=1980, gpm=True)
    spec = replace(spec, power_limit_w=700.0, default_power_limit_w=700.0)
    return replace(spec, power_limit_range_w=(200.0, 700.0), **kw)


def a100(uuid: str = "GPU-a100-0000", **kw: Any) -> FakeGpuSpec:
    """An A100 SXM: energy counter and MIG, no GPM."""
    return replace(FakeGpuSpec("NVIDIA A100-SXM4-80GB", uuid), **kw)


def v100(uuid: str = "GPU-v100-0000", **kw: Any) -> FakeGpuSpec:
    """A V100 PCIe (limits 100–250 W) with an energy counter, no GPM or MIG."""
    spec = FakeGpuSpec("Tesla V100-PCIE-32GB", uuid, memory_total_bytes=32 * 2**30)
    spec = replace(spec, sm_clock_mhz=1380, errors={"nvmlGpmQueryDeviceSupport": "NotSupported"})
    spec = replace(spec, power_limit_w=250.0, default_power_limit_w=250.0)
    return replace(spec, power_limit_range_w=(100.0, 250.0), **kw)


def p100(uuid: str = "GPU-p100-0000", **kw: Any) -> FakeGpuSpec:
    """A Pascal GPU: power only, no energy counter, GPM or MIG."""
    old = (
        "nvmlDeviceGetTotalEnergyConsumption",
        "nvmlGpmQueryDeviceSupport",
        "nvmlDeviceGetMigMode",
    )
    spec = FakeGpuSpec("Tesla P100-PCIE-16GB", uuid, memory_total_bytes=16 * 2**30)
    spec = replace(spec, sm_clock_mhz=1328, errors=dict.fromkeys(old, "NotSupported"))
    spec = replace(spec, power_limit_w=250.0, default_power_limit_w=250.0)
    return replace(spec, power_limit_range_w=(125.0, 250.0), **kw)


FakeClock = ManualClock  # seconds since "driver load"; tests move it with advance()


@dataclass
class _Handle:
    index: int


@dataclass
class _GpmSample:
    index: int = -1
    time_s: float = math.nan
    freed: bool = False


@dataclass
class _GpmMetric:
    metricId: int = 0
    nvmlReturn: int = NVML_SUCCESS
    value: float = 0.0


@dataclass
class _GpmMetricsGet:
    """The request/answer struct of ``nvmlGpmMetricsGet``, as in pynvml."""

    version: int = 0
    numMetrics: int = 0
    sample1: _GpmSample | None = None
    sample2: _GpmSample | None = None
    metrics: list[_GpmMetric] = field(default_factory=lambda: [_GpmMetric() for _ in range(477)])


class FakeNvml:
    """Stands in for the ``pynvml`` module: pass it as ``nvml=`` to the sensor."""

    NVMLError = NVMLError
    NVML_SUCCESS = NVML_SUCCESS
    NVML_CLOCK_SM = 1
    NVML_GPM_METRIC_SM_UTIL = 2
    NVML_GPM_METRIC_SM_OCCUPANCY = 3
    NVML_GPM_METRIC_MAX = 477
    NVML_GPM_METRICS_GET_VERSION = 1
    c_nvmlGpmMetricsGet_t = _GpmMetricsGet

    def __init__(
        self,
        gpus: Sequence[FakeGpuSpec],
        clock: Callable[[], float] | None = None,
        *,
        library_found: bool = True,
        driver: str = "550.54.15",
        cuda: int = 12040,
        privileged: bool = True,
        state_path: str | Path | None = None,
    ) -> None:
        self.gpus = list(gpus)
        self.privileged = privileged  # root / CAP_SYS_ADMIN: may set power limits
        self.state_path = Path(state_path) if state_path is not None else None
        self.set_calls: list[tuple[str, float]] = []  # (uuid, limit W) of every accepted set
        self.clock = clock or FakeClock()
        self.library_found = library_found
        self.driver, self.cuda = driver, cuda
        self.init_count = 0
        self.shutdown_calls = 0
        self.live_samples = 0
        self.calls: Counter[str] = Counter()
        # per GPU: (clock time, limit W) from which that limit was in force
        self.limit_history = [[(-math.inf, self._limit_w(spec))] for spec in self.gpus]
        # per GPU: (start, end) clock times it spent waiting at a collective
        self.waits: list[list[tuple[float, float]]] = [[] for _ in self.gpus]

    def __getattr__(self, name: str) -> Any:  # NVMLError_NotSupported & co.
        if name.startswith("NVMLError_") and name[10:] in ERRORS:
            return ERRORS[name[10:]]
        raise AttributeError(name)

    # -- library -----------------------------------------------------------

    def nvmlInit(self) -> None:
        if not self.library_found:
            raise _fail("LibraryNotFound")
        self.init_count += 1

    def nvmlShutdown(self) -> None:
        self._check_init()
        self.init_count -= 1
        self.shutdown_calls += 1

    def _check_init(self) -> None:
        if self.init_count <= 0:
            raise _fail("Uninitialized")

    def _gpu(self, handle: _Handle, fn: str) -> FakeGpuSpec:
        self._check_init()
        self.calls[fn] += 1
        spec = self.gpus[handle.index]
        if spec.lost_at_s is not None and self.clock() >= spec.lost_at_s:
            raise _fail("GpuIsLost")
        if fn in spec.errors:
            raise _fail(spec.errors[fn])
        return spec

    def nvmlSystemGetDriverVersion(self) -> str:
        self._check_init()
        return self.driver

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._check_init()
        return self.cuda

    def nvmlSystemGetNVMLVersion(self) -> str:
        self._check_init()
        return f"12.{self.driver}"

    # -- devices -----------------------------------------------------------

    def nvmlDeviceGetCount(self) -> int:
        self._check_init()
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> _Handle:
        self._check_init()
        if not 0 <= index < len(self.gpus):
            raise _fail("InvalidArgument")
        return _Handle(index)

    def nvmlDeviceGetHandleByUUID(self, uuid: str | bytes) -> _Handle:
        self._check_init()
        text = uuid.decode() if isinstance(uuid, bytes) else uuid
        for i, spec in enumerate(self.gpus):
            if spec.uuid == text:
                return _Handle(i)
        raise _fail("NotFound")

    def nvmlDeviceGetName(self, h: _Handle) -> str:
        return self._gpu(h, "nvmlDeviceGetName").name

    def nvmlDeviceGetUUID(self, h: _Handle) -> str:
        return self._gpu(h, "nvmlDeviceGetUUID").uuid

    def nvmlDeviceGetTotalEnergyConsumption(self, h: _Handle) -> int:
        spec = self._gpu(h, "nvmlDeviceGetTotalEnergyConsumption")
        if spec.limit_curve:
            return int(self._curve_energy_j(h.index, 0.0, self.clock()) * 1000)
        return int(spec.integral("power_w", 0.0, self.clock()) * 1000)

    def nvmlDeviceGetPowerUsage(self, h: _Handle) -> int:
        spec = self._gpu(h, "nvmlDeviceGetPowerUsage")
        if spec.limit_curve:
            return round(spec.curve_at(self._limit_w(spec))[0] * 1000)
        return round(spec.phase_at(self.clock()).power_w * 1000)

    def nvmlDeviceGetUtilizationRates(self, h: _Handle) -> SimpleNamespace:
        phase = self._gpu(h, "nvmlDeviceGetUtilizationRates").phase_at(self.clock())
        return SimpleNamespace(
            gpu=round(phase.utilization * 100), memory=round(phase.memory_utilization * 100)
        )

    def nvmlDeviceGetMemoryInfo(self, h: _Handle) -> SimpleNamespace:
        spec = self._gpu(h, "nvmlDeviceGetMemoryInfo")
        total, used = spec.memory_total_bytes, spec.memory_used_bytes
        return SimpleNamespace(total=total, used=used, free=total - used)

    def nvmlDeviceGetClockInfo(self, h: _Handle, clock_type: int) -> int:
        spec = self._gpu(h, "nvmlDeviceGetClockInfo")
        if clock_type != self.NVML_CLOCK_SM:
            raise _fail("InvalidArgument")
        return spec.sm_clock_mhz

    def nvmlDeviceGetPowerManagementLimit(self, h: _Handle) -> int:
        return round(self._limit_w(self._gpu(h, "nvmlDeviceGetPowerManagementLimit")) * 1000)

    def nvmlDeviceSetPowerManagementLimit(self, h: _Handle, limit_mw: int) -> None:
        """As the real call: root only, the limit in mW within the constraints."""
        spec = self._gpu(h, "nvmlDeviceSetPowerManagementLimit")
        if not self.privileged:
            raise _fail("NoPermission")
        low, high = spec.power_limit_range_w
        limit_w = int(limit_mw) / 1000.0
        if not low <= limit_w <= high:
            raise _fail("InvalidArgument")
        spec.power_limit_w = limit_w
        self.limit_history[h.index].append((self.clock(), limit_w))
        self.set_calls.append((spec.uuid, limit_w))
        if self.state_path is not None:
            limits = self._stored_limits()
            limits[spec.uuid] = limit_w
            tmp = self.state_path.with_name(self.state_path.name + f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(limits))
            os.replace(tmp, self.state_path)

    def nvmlDeviceGetPowerManagementDefaultLimit(self, h: _Handle) -> int:
        spec = self._gpu(h, "nvmlDeviceGetPowerManagementDefaultLimit")
        return round(spec.default_power_limit_w * 1000)

    def nvmlDeviceGetPowerManagementLimitConstraints(self, h: _Handle) -> list[int]:
        low, high = self._gpu(h, "nvmlDeviceGetPowerManagementLimitConstraints").power_limit_range_w
        return [round(low * 1000), round(high * 1000)]

    def nvmlDeviceGetComputeRunningProcesses(self, h: _Handle) -> list[SimpleNamespace]:
        gpu = self._gpu(h, "nvmlDeviceGetComputeRunningProcesses")
        none = 0xFFFFFFFF  # no MIG instance
        return [
            SimpleNamespace(pid=pid, usedGpuMemory=mem, gpuInstanceId=none, computeInstanceId=none)
            for pid, mem in gpu.processes
        ]

    def nvmlDeviceGetMigMode(self, h: _Handle) -> list[int]:
        mode = self._gpu(h, "nvmlDeviceGetMigMode").mig_mode
        return [mode, mode]

    # -- limits and the training job of curve-driven GPUs -------------------

    def _stored_limits(self) -> dict[str, float]:
        if self.state_path is None or not self.state_path.exists():
            return {}
        return {k: float(v) for k, v in json.loads(self.state_path.read_text()).items()}

    def _limit_w(self, spec: FakeGpuSpec) -> float:
        return self._stored_limits().get(spec.uuid, spec.power_limit_w)

    def _curve_energy_j(self, index: int, t0: float, t1: float) -> float:
        spec, history = self.gpus[index], self.limit_history[index]
        ends = [t for t, _ in history[1:]] + [math.inf]
        total = 0.0
        for (start, limit_w), end in zip(history, ends, strict=True):
            lo, hi = max(t0, start), min(t1, end)
            if hi > lo:
                total += spec.curve_at(limit_w)[0] * (hi - lo)
                for w0, w1 in self.waits[index]:  # waiting draws wait power, not the curve's
                    overlap = min(hi, w1) - max(lo, w0)
                    if overlap > 0:
                        assert spec.wait_power_w is not None
                        total -= (spec.curve_at(limit_w)[0] - spec.wait_power_w) * overlap
        return total

    def wait(self, seconds: float, index: int = 0) -> None:
        """GPU ``index`` waits ``seconds`` at a collective (the clock moves) at its wait power.

        Other curve-driven GPUs of this fake keep computing meanwhile: give each
        rank of a data-parallel test its own fake.
        """
        if self.gpus[index].wait_power_w is None:
            raise ValueError(f"GPU {index} has no wait_power_w to wait at")
        start = self.clock()
        self.clock.advance(seconds)  # type: ignore[attr-defined]  # a ManualClock
        if seconds > 0:
            self.waits[index].append((start, start + seconds))

    def step_time_s(self, index: int = 0) -> float:
        """How long one training step takes on GPU ``index`` at its current limit."""
        spec = self.gpus[index]
        return spec.curve_at(self._limit_w(spec))[1] * spec.slowdown

    def run_step(self) -> float:
        """One synchronous step on every curve-driven GPU: the clock moves by the slowest."""
        step_s = max(self.step_time_s(i) for i, g in enumerate(self.gpus) if g.limit_curve)
        self.clock.advance(step_s)  # type: ignore[attr-defined]  # a ManualClock
        return step_s

    # -- GPM (Hopper and newer) --------------------------------------------

    def nvmlGpmQueryDeviceSupport(self, h: _Handle) -> SimpleNamespace:
        spec = self._gpu(h, "nvmlGpmQueryDeviceSupport")
        return SimpleNamespace(version=1, isSupportedDevice=int(spec.gpm))

    def nvmlGpmSampleAlloc(self) -> _GpmSample:
        self._check_init()
        self.live_samples += 1
        return _GpmSample()

    def nvmlGpmSampleFree(self, sample: _GpmSample) -> None:
        self._check_init()
        if sample.freed:
            raise _fail("InvalidArgument")
        sample.freed = True
        self.live_samples -= 1

    def nvmlGpmSampleGet(self, h: _Handle, sample: _GpmSample) -> _GpmSample:
        spec = self._gpu(h, "nvmlGpmSampleGet")
        if not spec.gpm or sample.freed:
            raise _fail("NotSupported" if not spec.gpm else "InvalidArgument")
        sample.index, sample.time_s = h.index, self.clock()
        return sample

    def nvmlGpmMetricsGet(self, request: _GpmMetricsGet) -> _GpmMetricsGet:
        self._check_init()
        s1, s2 = request.sample1, request.sample2
        if (
            request.version != 1
            or s1 is None
            or s2 is None
            or s1.index != s2.index
            or s1.index < 0
            or not s2.time_s > s1.time_s
        ):
            raise _fail("InvalidArgument")
        spec = self.gpus[s1.index]
        attrs = {
            self.NVML_GPM_METRIC_SM_UTIL: "sm_activity",
            self.NVML_GPM_METRIC_SM_OCCUPANCY: "sm_occupancy",
        }
        for metric in request.metrics[: request.numMetrics]:
            attr = attrs.get(metric.metricId)
            if attr is None:
                metric.nvmlReturn = _ERROR_CODES["NotSupported"][0]
                continue
            mean = spec.integral(attr, s1.time_s, s2.time_s) / (s2.time_s - s1.time_s)
            metric.nvmlReturn, metric.value = NVML_SUCCESS, mean * 100.0
        return request

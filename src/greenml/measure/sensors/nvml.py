"""NVIDIA GPUs through NVML (the ``nvidia-ml-py`` bindings, module ``pynvml``).

Volta and newer GPUs expose a cumulative energy counter (millijoules since the
driver loaded): those devices are measured by ``counter``. Older GPUs only
report power; they are labelled ``power-integrated`` and the Meter integrates
:meth:`NvmlSensor.read_power_w`. Devices follow ``CUDA_VISIBLE_DEVICES`` so
``gpu0`` is the GPU the program sees as ``cuda:0``.

Lazy imports: pynvml (~35 ms) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from greenml.errors import SensorError, SensorUnavailable
from greenml.measure.measurement import COUNTER, POWER_INTEGRATED
from greenml.measure.sensors.base import Device, Sensor
from greenml.measure.sensors.gpu_common import read_each
from greenml.measure.sensors.nvml_bands import COUNTER_UPDATE_S, MODULE_NOTE, band_for

log = logging.getLogger(__name__)

# The bands per GPU family, their sources, the counter's update period and scope
# (board or Grace module) are in nvml_bands.py; these names stay for their callers.
NVML_UNCERTAINTY_REL = 0.05
# Power *integrated* on A100/H100-class GPUs misses bursts: their power reading covers
# about a quarter of the runtime (Yang, Adamek and Armour, SC'24), and on an H100 the
# 10 Hz integral of a bursty load was 10-12 % off the counter for 1 s windows (up to
# 22 %), 0.6-2 % for 10 s (docs/validation.md, benchmarks/gpu/meter_vs_counter.py,
# 2026-11-28). A GPU of those families measured without its counter says ±12 %.
BURSTY_POWER_FAMILIES = ("A100", "A800", "H100", "H800", "H200", "GH200", "B200", "GB200")
BURSTY_POWER_UNCERTAINTY_REL = 0.12
NO_COUNTER_NOTE = "no energy counter on this GPU; power sampled and integrated"
MIG_NOTE = "MIG enabled: energy is for the whole physical GPU, shared by all its instances"
MIG_ENTRY_MESSAGE = (
    "CUDA_VISIBLE_DEVICES selects a MIG instance ({entry}): NVML energy counters are per "
    "physical GPU and cannot be split per MIG instance; measure from outside the MIG "
    "instance, on the whole GPU"
)

_Values = dict[str, float]
_MetricReader = Callable[[Any, Any], _Values]


def _utilization(nvml: Any, handle: Any) -> dict[str, float]:
    rates = nvml.nvmlDeviceGetUtilizationRates(handle)
    return {"utilization": rates.gpu / 100.0, "memory_utilization": rates.memory / 100.0}


def _memory(nvml: Any, handle: Any) -> dict[str, float]:
    info = nvml.nvmlDeviceGetMemoryInfo(handle)
    return {"memory_used_bytes": float(info.used), "memory_total_bytes": float(info.total)}


def _sm_clock(nvml: Any, handle: Any) -> dict[str, float]:
    return {"sm_clock_mhz": float(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))}


def _power_limit(nvml: Any, handle: Any) -> dict[str, float]:
    return {"power_limit_w": nvml.nvmlDeviceGetPowerManagementLimit(handle) / 1000.0}


# Power domains NVML (12.x drivers) reports beside the board: the whole Grace module and
# the GPU memory, as field values with a power scope; absent where the driver has none.
NVML_FI_DEV_POWER_INSTANT = 186
POWER_SCOPES = {"module_power_w": 1, "memory_power_w": 2}  # NVML_POWER_SCOPE_MODULE, _MEMORY


def _power_domains(nvml: Any, handle: Any) -> dict[str, float]:
    """Module and memory power (W) where NVML gives them; NotSupported when it gives none."""
    get = getattr(nvml, "nvmlDeviceGetFieldValues", None)
    if get is None:  # bindings older than field values
        raise nvml.NVMLError_FunctionNotFound()
    fields = [(NVML_FI_DEV_POWER_INSTANT, scope) for scope in POWER_SCOPES.values()]
    values = get(handle, fields)
    out = {name: float(v.value.uiVal) / 1000.0
           for name, v in zip(POWER_SCOPES, values, strict=True)
           if int(v.nvmlReturn) == 0}  # fmt: skip
    if not out:
        raise nvml.NVMLError_NotSupported()
    return out


_METRIC_READERS: dict[str, _MetricReader] = {
    "utilization": _utilization,
    "memory": _memory,
    "sm_clock": _sm_clock,
    "power_limit": _power_limit,
    "power_domains": _power_domains,
}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


# Where an NVIDIA driver shows itself: Linux, containers with GPUs, WSL 2.
_DRIVER_MARKERS = ("/proc/driver/nvidia", "/dev/nvidiactl", "/usr/lib/wsl/lib/libnvidia-ml.so.1")


def import_nvml(nvml: Any | None = None) -> Any:
    """``nvml`` if given, else the ``pynvml`` module.

    Raises:
        SensorUnavailable: No NVIDIA driver on this machine, or nvidia-ml-py is missing.
    """
    if nvml is not None:
        return nvml
    if sys.platform.startswith("linux") and not any(map(os.path.exists, _DRIVER_MARKERS)):
        # Cheaper than importing pynvml to learn the same (~35 ms on a small machine).
        raise SensorUnavailable("NVML unavailable: no NVIDIA driver on this machine")
    try:
        import pynvml
    except ImportError as exc:
        raise SensorUnavailable("NVML unavailable: nvidia-ml-py is not installed") from exc
    return pynvml


@dataclass
class _Gpm:
    """Two GPM samples used alternately: the previous one and the one being filled."""

    samples: list[Any]
    slot: int = 0
    primed: bool = False


@dataclass
class _Gpu:
    device: Device
    handle: Any
    base_mj: int | None  # counter value at construction; None: no counter
    last_mj: int = 0
    offset_mj: int = 0  # counter values lost to driver reloads / GPU resets
    lost: bool = False
    unsupported: set[str] = field(default_factory=set)
    gpm: _Gpm | None = None


class NvmlSensor(Sensor):
    """NVIDIA GPUs, one :class:`Device` per visible GPU (``gpu0``, ``gpu1``...).

    Args:
        indices: Positions in the visible GPU list (CUDA ordinals); None for all.
        nvml: A ``pynvml``-compatible module (tests inject a fake); default ``pynvml``.

    Raises:
        SensorUnavailable: NVML missing or failing, or no GPU selected.
    """

    def __init__(self, indices: Sequence[int] | None = None, *, nvml: Any | None = None) -> None:
        self._nvml = import_nvml(nvml)
        try:
            self._nvml.nvmlInit()
        except self._nvml.NVMLError as exc:
            raise SensorUnavailable(f"NVML unavailable: {exc}") from exc
        self._closed = False
        self._gpus: dict[str, _Gpu] = {}
        self._lock = threading.Lock()  # the Meter's sampler thread reads too
        try:
            self._open(indices)
        except SensorUnavailable:
            self.close()
            raise
        except self._nvml.NVMLError as exc:
            self.close()
            raise SensorUnavailable(f"NVML unavailable: {exc}") from exc

    def _open(self, indices: Sequence[int] | None) -> None:
        visible = visible_handles(self._nvml)
        chosen = range(len(visible)) if indices is None else indices
        for ordinal in dict.fromkeys(chosen):
            if not 0 <= ordinal < len(visible):
                raise SensorUnavailable(
                    f"GPU index {ordinal} requested but {len(visible)} GPU(s) are visible"
                )
            gpu = self._open_gpu(f"gpu{ordinal}", visible[ordinal])
            self._gpus[gpu.device.key] = gpu

    def _open_gpu(self, key: str, handle: Any) -> _Gpu:
        nvml = self._nvml
        base_mj = self._probe(nvml.nvmlDeviceGetTotalEnergyConsumption, handle)
        notes = [] if base_mj is not None else [NO_COUNTER_NOTE]
        mig = self._probe(nvml.nvmlDeviceGetMigMode, handle)
        if mig is not None and mig[0] == 1:
            notes.append(MIG_NOTE)
        name = _text(nvml.nvmlDeviceGetName(handle))
        band = band_for(name)
        if band.scope == "module":
            notes.append(MODULE_NOTE)
        device = Device(
            key=key,
            component="gpu",
            name=name,
            method=COUNTER if base_mj is not None else POWER_INTEGRATED,
            uncertainty_rel=band.counter_rel if base_mj is not None else band.integrated_rel,
            note="; ".join(notes),
            counter_period_s=COUNTER_UPDATE_S if base_mj is not None else None,
        )
        base = None if base_mj is None else int(base_mj)
        return _Gpu(device, handle, base, last_mj=base or 0, gpm=self._open_gpm(handle))

    def _probe(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Call ``fn``; None when the GPU or driver does not support it."""
        unsupported = (self._nvml.NVMLError_NotSupported, self._nvml.NVMLError_FunctionNotFound)
        try:
            return fn(*args)
        except unsupported:
            return None

    def _open_gpm(self, handle: Any) -> _Gpm | None:
        nvml = self._nvml
        if not hasattr(nvml, "nvmlGpmQueryDeviceSupport"):
            return None  # bindings older than GPM (Hopper)
        support = self._probe(nvml.nvmlGpmQueryDeviceSupport, handle)
        if support is None or not support.isSupportedDevice:
            return None
        return _Gpm([nvml.nvmlGpmSampleAlloc(), nvml.nvmlGpmSampleAlloc()])

    @property
    def devices(self) -> list[Device]:
        """The selected GPUs, in visible order."""
        return [gpu.device for gpu in self._gpus.values()]

    def read_energy_j(self) -> dict[str, float]:
        """Joules since construction for the GPUs with an energy counter."""
        counters = [g for g in self._gpus.values() if g.base_mj is not None]
        return self._read_each(counters, self._energy_j)

    def read_power_w(self) -> dict[str, float]:
        """Board power in watts of every GPU that could be read."""
        return self._read_each(list(self._gpus.values()), self._power_w)

    def read_metrics(self) -> dict[str, dict[str, float]]:
        """Utilization, memory, SM clock, power limit and (GPM) SM activity per GPU."""
        return self._read_each(list(self._gpus.values()), self._metrics)

    def has_sm_activity(self, key: str) -> bool:
        """Whether ``sm_activity`` (GPM) is reported for ``key``.

        Without it, ``utilization`` only says a kernel was running, not how many
        SMs it kept busy, so it overstates how much of the GPU was used.
        """
        gpu = self._gpu(key)
        return gpu.gpm is not None and "gpm" not in gpu.unsupported

    def power_limit_w(self, key: str) -> float:
        """Current power limit of ``key`` in watts."""
        return float(self._call(key, self._nvml.nvmlDeviceGetPowerManagementLimit)) / 1000.0

    def default_power_limit_w(self, key: str) -> float:
        """Default (factory) power limit of ``key`` in watts."""
        mw = self._call(key, self._nvml.nvmlDeviceGetPowerManagementDefaultLimit)
        return float(mw) / 1000.0

    def power_limit_constraints_w(self, key: str) -> tuple[float, float]:
        """Lowest and highest settable power limit of ``key`` in watts."""
        low, high = self._call(key, self._nvml.nvmlDeviceGetPowerManagementLimitConstraints)
        return float(low) / 1000.0, float(high) / 1000.0

    def close(self) -> None:
        """Free GPM samples and shut NVML down (once)."""
        if self._closed:
            return
        self._closed = True
        samples = [s for gpu in self._gpus.values() if gpu.gpm for s in gpu.gpm.samples]
        for sample in samples:
            try:
                self._nvml.nvmlGpmSampleFree(sample)
            except self._nvml.NVMLError as exc:
                log.debug("nvmlGpmSampleFree failed: %s", exc)
        try:
            self._nvml.nvmlShutdown()
        except self._nvml.NVMLError as exc:
            log.debug("nvmlShutdown failed: %s", exc)

    # -- reads -------------------------------------------------------------

    def _read_each(self, gpus: list[_Gpu], read: Callable[[_Gpu], Any]) -> dict[str, Any]:
        """``read`` every GPU; a GPU that fails is left out, all failing raises."""
        with self._lock:
            return read_each(gpus, read, self._nvml.NVMLError, self._failed)

    def _failed(self, gpu: _Gpu, exc: BaseException) -> str:
        """``exc`` as text; a GPU NVML calls lost is marked so."""
        if isinstance(exc, self._nvml.NVMLError_GpuIsLost):
            gpu.lost = True  # it needs a reset: stop asking
            log.warning("%s is lost; it is no longer measured", gpu.device.key)
        return str(exc)

    def _energy_j(self, gpu: _Gpu) -> float:
        mj = int(self._nvml.nvmlDeviceGetTotalEnergyConsumption(gpu.handle))
        if mj < gpu.last_mj:  # the counter restarted (driver reload, GPU reset)
            gpu.offset_mj += gpu.last_mj
        gpu.last_mj = mj
        return (gpu.offset_mj + mj - (gpu.base_mj or 0)) / 1000.0

    def _power_w(self, gpu: _Gpu) -> float:
        return float(self._nvml.nvmlDeviceGetPowerUsage(gpu.handle)) / 1000.0

    def _metrics(self, gpu: _Gpu) -> dict[str, float]:
        out: dict[str, float] = {}
        for name, reader in _METRIC_READERS.items():
            if name not in gpu.unsupported:
                out.update(self._guarded(gpu, name, partial(reader, self._nvml, gpu.handle)))
        if gpu.gpm is not None and "gpm" not in gpu.unsupported:
            out.update(self._guarded(gpu, "gpm", partial(self._gpm_metrics, gpu)))
        return out

    def _guarded(self, gpu: _Gpu, name: str, read: Callable[[], _Values]) -> _Values:
        """One metric group; NotSupported disables it, GPU lost propagates."""
        try:
            return read()
        except (self._nvml.NVMLError_NotSupported, self._nvml.NVMLError_FunctionNotFound):
            gpu.unsupported.add(name)
        except self._nvml.NVMLError_GpuIsLost:
            raise
        except self._nvml.NVMLError as exc:
            log.debug("%s: %s failed: %s", gpu.device.key, name, exc)
        return {}

    def _gpm_metrics(self, gpu: _Gpu) -> dict[str, float]:
        """SM activity and occupancy between the previous GPM sample and a new one."""
        nvml, gpm = self._nvml, gpu.gpm
        assert gpm is not None
        current = gpm.samples[gpm.slot]
        nvml.nvmlGpmSampleGet(gpu.handle, current)
        gpm.slot ^= 1
        if not gpm.primed:
            gpm.primed = True
            return {}
        request = nvml.c_nvmlGpmMetricsGet_t()
        request.version = nvml.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = 2
        request.sample1 = gpm.samples[gpm.slot]  # the previous sample
        request.sample2 = current
        request.metrics[0].metricId = nvml.NVML_GPM_METRIC_SM_UTIL
        request.metrics[1].metricId = nvml.NVML_GPM_METRIC_SM_OCCUPANCY
        nvml.nvmlGpmMetricsGet(request)
        out: dict[str, float] = {}
        for name, metric in zip(("sm_activity", "sm_occupancy"), request.metrics[:2], strict=True):
            if metric.nvmlReturn == nvml.NVML_SUCCESS:
                out[name] = min(max(metric.value / 100.0, 0.0), 1.0)
        return out

    def _gpu(self, key: str) -> _Gpu:
        try:
            return self._gpus[key]
        except KeyError:
            raise SensorError(f"no GPU {key!r} in this sensor ({', '.join(self._gpus)})") from None

    def _call(self, key: str, fn: Callable[[Any], Any]) -> Any:
        gpu = self._gpu(key)
        try:
            return fn(gpu.handle)
        except self._nvml.NVMLError as exc:
            raise SensorError(f"{key}: {fn.__name__} failed: {exc}") from exc


def visible_handles(nvml: Any) -> list[Any]:
    """Handles of the GPUs CUDA would show, in ``CUDA_VISIBLE_DEVICES`` order.

    Like CUDA, entries after the first invalid one are ignored.
    """
    count = int(nvml.nvmlDeviceGetCount())
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is None:
        entries = [str(i) for i in range(count)]
    elif not env.strip():
        raise SensorUnavailable("no GPU visible: CUDA_VISIBLE_DEVICES is empty")
    else:
        entries = [e.strip() for e in env.split(",")]
    handles: list[Any] = []
    seen: set[str] = set()
    for entry in entries:
        if entry.startswith("MIG-"):
            raise SensorUnavailable(MIG_ENTRY_MESSAGE.format(entry=entry))
        handle = _resolve(nvml, entry, count)
        uuid = None if handle is None else _text(nvml.nvmlDeviceGetUUID(handle))
        if handle is None or uuid in seen:
            log.warning("CUDA_VISIBLE_DEVICES: %r is invalid, it and later entries ignored", entry)
            break
        seen.add(uuid or "")
        handles.append(handle)
    if not handles:
        raise SensorUnavailable(f"no GPU visible (NVML sees {count}, CUDA_VISIBLE_DEVICES={env!r})")
    return handles


def _resolve(nvml: Any, entry: str, count: int) -> Any | None:
    """The handle for one ``CUDA_VISIBLE_DEVICES`` entry, None when it is invalid."""
    if entry.isdigit():
        return nvml.nvmlDeviceGetHandleByIndex(int(entry)) if int(entry) < count else None
    if not entry.startswith("GPU-"):
        return None
    try:
        return nvml.nvmlDeviceGetHandleByUUID(entry)
    except (nvml.NVMLError_NotFound, nvml.NVMLError_InvalidArgument):
        pass
    # CUDA also accepts a unique prefix of the UUID.
    handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    matches = [h for h in handles if _text(nvml.nvmlDeviceGetUUID(h)).startswith(entry)]
    return matches[0] if len(matches) == 1 else None


def nvml_environment(nvml: Any | None = None) -> dict[str, Any]:
    """Driver, CUDA and NVML versions and the GPUs present; ``{}`` without NVML.

    Lists every physical GPU (``index`` is NVML's), whatever ``CUDA_VISIBLE_DEVICES`` says.
    """
    try:
        nvml = import_nvml(nvml)
    except SensorUnavailable:
        return {}
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        log.debug("NVML environment unavailable: %s", exc)
        return {}
    try:
        cuda = int(nvml.nvmlSystemGetCudaDriverVersion())
        return {
            "driver_version": _text(nvml.nvmlSystemGetDriverVersion()),
            "cuda_driver_version": f"{cuda // 1000}.{cuda % 1000 // 10}",
            "nvml_version": _text(nvml.nvmlSystemGetNVMLVersion()),
            "gpus": [_gpu_info(nvml, i) for i in range(int(nvml.nvmlDeviceGetCount()))],
        }
    except nvml.NVMLError as exc:
        log.debug("NVML environment unavailable: %s", exc)
        return {}
    finally:
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()


def _gpu_info(nvml: Any, index: int) -> dict[str, Any]:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    try:
        limit_w: float | None = nvml.nvmlDeviceGetPowerManagementLimit(handle) / 1000.0
    except nvml.NVMLError:
        limit_w = None
    return {
        "index": index,
        "name": _text(nvml.nvmlDeviceGetName(handle)),
        "uuid": _text(nvml.nvmlDeviceGetUUID(handle)),
        "memory_total_bytes": int(nvml.nvmlDeviceGetMemoryInfo(handle).total),
        "power_limit_w": limit_w,
    }


def integrated_band(name: str) -> float:
    """The relative uncertainty of power integrated on GPU ``name`` (no counter read)."""
    return band_for(name).integrated_rel

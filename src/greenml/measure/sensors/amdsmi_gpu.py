"""AMD GPUs through AMD SMI's Python bindings (module ``amdsmi``, shipped with ROCm).

What AMD SMI documents, and how it is used here (rocm.docs.amd.com/projects/amdsmi,
"Power Queries" and the Python API reference):

- ``amdsmi_get_energy_count`` gives an energy *accumulator* (a uint64 count) and its
  ``counter_resolution`` in microjoules per count (15.3 µJ on MI200/MI300): joules =
  count × resolution / 1e6. Older bindings name the count ``power``, newer ones
  ``energy_accumulator``; both are read. It is "not supported on virtual machine
  guest": such GPUs are labelled ``power-integrated`` and their power is sampled.
- ``amdsmi_get_power_info``: ``current_socket_power`` (MI300 and later) /
  ``average_socket_power`` (Navi, MI200 and earlier) in watts; a field the GPU
  does not report is the string ``"N/A"`` (UINT32_MAX in the C struct).
- ``amdsmi_get_gpu_activity``: ``gfx_activity`` / ``umc_activity`` in percent.
- ``amdsmi_get_gpu_vram_usage``: ``vram_used`` / ``vram_total`` in MB.
- ``amdsmi_get_power_cap_info``: ``power_cap``, ``default_power_cap``,
  ``min_power_cap``, ``max_power_cap`` in microwatts on Linux bare metal.

GPUs follow ROCm's ``ROCR_VISIBLE_DEVICES`` then ``HIP_VISIBLE_DEVICES`` (or
``CUDA_VISIBLE_DEVICES``, which HIP also honours), so ``gpu0`` is the program's
``cuda:0``. AMD SMI enumerates GPUs in the order HIP does (both follow the KFD
node order). A GPU split into compute partitions (CPX, DPX …) is labelled like
an NVIDIA MIG GPU: its counter covers the whole physical GPU.

Lazy import: ``amdsmi`` is imported only when a sensor is opened.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from greenml.errors import SensorError, SensorUnavailable
from greenml.measure.measurement import COUNTER, POWER_INTEGRATED
from greenml.measure.sensors.base import Device, Sensor
from greenml.measure.sensors.gpu_common import read_each

log = logging.getLogger(__name__)

# AMD publishes no accuracy figure for its socket power telemetry; the same ±5 % as
# NVML's board power is assumed (Zeus and CodeCarbon make the same assumption).
AMD_GPU_UNCERTAINTY_REL = 0.05
COUNTER_BITS = 64  # amdsmi_get_energy_count writes a uint64_t accumulator
NO_COUNTER_NOTE = "AMD SMI gives no energy counter here (e.g. a VM guest); power sampled"
PARTITION_NOTE = (
    "compute partition {mode}: AMD SMI reports energy for the whole physical GPU, "
    "shared by all of its partitions"
)
NA = "N/A"
UINT32_MAX = 2**32 - 1


def import_amdsmi(amdsmi: Any | None = None) -> Any:
    """``amdsmi`` if given, else the ``amdsmi`` module.

    Raises:
        SensorUnavailable: No AMD GPU driver (``/dev/kfd``), or the bindings are missing.
    """
    if amdsmi is not None:
        return amdsmi
    if not os.path.exists("/dev/kfd"):
        raise SensorUnavailable("AMD SMI unavailable: no AMD GPU driver (/dev/kfd is missing)")
    try:
        import amdsmi as module  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        raise SensorUnavailable("AMD SMI unavailable: amdsmi is not installed") from exc
    return module


def _number(value: Any) -> float | None:
    """A numeric field of an AMD SMI dict; None for ``"N/A"`` and missing values."""
    if value is None or value == NA:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def error_code(amdsmi: Any, exc: BaseException) -> int | None:
    """The AMD SMI status code carried by ``exc`` (None when it has none)."""
    getter = getattr(exc, "get_error_code", None)
    return int(getter()) if callable(getter) else None


def status(amdsmi: Any, name: str, default: int) -> int:
    """``amdsmi.AmdSmiRetCode.<name>`` as an int (bindings differ in what they define)."""
    codes = getattr(amdsmi, "AmdSmiRetCode", None)
    return int(getattr(codes, name, default))


def visible_handles(amdsmi: Any) -> list[tuple[Any, str]]:
    """``(handle, uuid)`` of the GPUs a HIP program sees, in its order.

    ``ROCR_VISIBLE_DEVICES`` selects first, then ``HIP_VISIBLE_DEVICES`` (else
    ``CUDA_VISIBLE_DEVICES``) indexes what is left. Entries are ordinals or UUIDs
    (``GPU-`` and hex digits, a unique prefix of the UUID without dashes); like
    ROCm, an invalid entry ends the list.

    Raises:
        SensorUnavailable: No GPU is left visible.
    """
    handles = list(amdsmi.amdsmi_get_processor_handles())
    chosen = [(h, str(amdsmi.amdsmi_get_gpu_device_uuid(h))) for h in handles]
    hip_var = "HIP_VISIBLE_DEVICES" if "HIP_VISIBLE_DEVICES" in os.environ else (
        "CUDA_VISIBLE_DEVICES")  # fmt: skip
    for var in ("ROCR_VISIBLE_DEVICES", hip_var):
        env = os.environ.get(var)
        if env is None:
            continue
        if not env.strip():
            raise SensorUnavailable(f"no AMD GPU visible: {var} is empty")
        chosen = _select(chosen, [e.strip() for e in env.split(",")], var)
    if not chosen:
        raise SensorUnavailable(f"no AMD GPU visible (AMD SMI sees {len(handles)})")
    return chosen


def _select(gpus: list[tuple[Any, str]], entries: list[str], var: str) -> list[tuple[Any, str]]:
    out: list[tuple[Any, str]] = []
    for entry in entries:
        match: tuple[Any, str] | None = None
        if entry.isdigit():
            match = gpus[int(entry)] if int(entry) < len(gpus) else None
        else:
            want = entry.lower().removeprefix("gpu-").replace("-", "")
            found = [g for g in gpus if want and g[1].lower().replace("-", "").startswith(want)]
            match = found[0] if len(found) == 1 else None
        if match is None or match in out:
            log.warning("%s: %r is invalid, it and later entries ignored", var, entry)
            break
        out.append(match)
    return out


@dataclass
class _Gpu:
    device: Device
    handle: Any
    resolution_uj: float  # microjoules per count; 0 without a counter
    base: int = 0
    last: int = 0
    offset: int = 0  # counts lost to resets (driver reloads) and wraps
    lost: bool = False


class AmdGpuSensor(Sensor):
    """AMD GPUs, one :class:`Device` per visible GPU (``gpu0`` …).

    Args:
        indices: Positions in the visible list (HIP ordinals); None for all.
        amdsmi: An ``amdsmi``-compatible module (tests inject a fake).

    Raises:
        SensorUnavailable: AMD SMI missing or failing, or no GPU selected.
    """

    def __init__(self, indices: Sequence[int] | None = None, *, amdsmi: Any | None = None) -> None:
        self._smi = import_amdsmi(amdsmi)
        smi = self._smi
        try:
            flags = getattr(getattr(smi, "AmdSmiInitFlags", None), "INIT_AMD_GPUS", None)
            smi.amdsmi_init() if flags is None else smi.amdsmi_init(flags)
        except smi.AmdSmiException as exc:
            raise SensorUnavailable(f"AMD SMI unavailable: {_describe(smi, exc)}") from exc
        self._closed = False
        self._lock = threading.Lock()
        self._gpus: dict[str, _Gpu] = {}
        try:
            visible = visible_handles(smi)
            for ordinal in dict.fromkeys(range(len(visible)) if indices is None else indices):
                if not 0 <= ordinal < len(visible):
                    raise SensorUnavailable(
                        f"GPU index {ordinal} requested but {len(visible)} AMD GPU(s) are visible"
                    )
                gpu = self._open_gpu(f"gpu{ordinal}", visible[ordinal][0])
                self._gpus[gpu.device.key] = gpu
        except SensorUnavailable:
            self.close()
            raise
        except smi.AmdSmiException as exc:
            self.close()
            raise SensorUnavailable(f"AMD SMI unavailable: {_describe(smi, exc)}") from exc

    def _open_gpu(self, key: str, handle: Any) -> _Gpu:
        smi = self._smi
        notes: list[str] = []
        counter = self._probe(smi.amdsmi_get_energy_count, handle)
        count = None if counter is None else _count(counter)
        resolution = 0.0 if counter is None else _number(counter.get("counter_resolution")) or 0.0
        if count is None or resolution <= 0:
            count, resolution = None, 0.0
            notes.append(NO_COUNTER_NOTE)
        mode = self._probe(smi.amdsmi_get_gpu_compute_partition, handle)
        if isinstance(mode, str) and mode.strip() and mode.strip().upper() != "SPX":
            notes.append(PARTITION_NOTE.format(mode=mode.strip()))
        asic = self._probe(smi.amdsmi_get_gpu_asic_info, handle) or {}
        device = Device(
            key=key,
            component="gpu",
            name=str(asic.get("market_name") or "AMD GPU"),
            method=COUNTER if count is not None else POWER_INTEGRATED,
            uncertainty_rel=AMD_GPU_UNCERTAINTY_REL,
            note="; ".join(notes),
        )
        base = count or 0
        return _Gpu(device, handle, resolution, base=base, last=base)

    def _probe(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)``; None when the GPU or driver does not support it."""
        try:
            return fn(*args)
        except self._smi.AmdSmiException as exc:
            if error_code(self._smi, exc) in (status(self._smi, "STATUS_NOT_SUPPORTED", 2),
                                              status(self._smi, "STATUS_NOT_YET_IMPLEMENTED", 3)):
                return None  # fmt: skip
            raise

    @property
    def devices(self) -> list[Device]:
        return [g.device for g in self._gpus.values()]

    def handle(self, key: str) -> Any:
        """The AMD SMI handle of ``key`` (power-cap and clock control use it)."""
        try:
            return self._gpus[key].handle
        except KeyError:
            raise SensorError(f"no AMD GPU {key!r} in this sensor") from None

    def read_energy_j(self) -> dict[str, float]:
        """Joules since construction of the GPUs with a counter (wrap and resets handled)."""
        gpus = [g for g in self._gpus.values() if g.resolution_uj > 0]
        return self._read_each(gpus, self._energy_j)

    def read_power_w(self) -> dict[str, float]:
        """Socket power in watts (current, else average) of each GPU that reports it."""
        return self._read_each(list(self._gpus.values()), self._power_w)

    def read_metrics(self) -> dict[str, dict[str, float]]:
        """Utilization (gfx, memory), VRAM used/total and the power cap of each GPU."""
        return self._read_each(list(self._gpus.values()), self._metrics)

    def close(self) -> None:
        if getattr(self, "_closed", True):
            return
        self._closed = True
        try:
            self._smi.amdsmi_shut_down()
        except self._smi.AmdSmiException as exc:
            log.debug("amdsmi_shut_down failed: %s", exc)

    # -- reads -------------------------------------------------------------

    def _read_each(self, gpus: list[_Gpu], read: Callable[[_Gpu], Any]) -> dict[str, Any]:
        """``read`` each GPU; one that fails is a gap, all failing raises SensorError."""
        with self._lock:
            return read_each(gpus, read, self._smi.AmdSmiException, self._failed, "AMD GPU")

    def _failed(self, gpu: _Gpu, exc: BaseException) -> str:
        """``exc`` described; a GPU that left the bus is marked lost."""
        described = _describe(self._smi, exc)
        if error_code(self._smi, exc) == status(self._smi, "STATUS_NOT_FOUND", 31):
            gpu.lost = True  # the GPU left the bus: stop asking
            log.warning("%s disappeared; it is no longer measured", gpu.device.key)
        return described

    def _energy_j(self, gpu: _Gpu) -> float | None:
        count = _count(self._smi.amdsmi_get_energy_count(gpu.handle))
        if count is None:
            return None
        if count < gpu.last:
            if gpu.last >= 2 ** (COUNTER_BITS - 1):  # it wrapped past 2^64
                gpu.offset += 2**COUNTER_BITS
            else:  # it restarted (driver reload, GPU reset): count on from there
                log.warning("%s: energy counter went back; counting on from its new value",
                            gpu.device.key)  # fmt: skip
                gpu.offset += gpu.last
        gpu.last = count
        return (gpu.offset + count - gpu.base) * gpu.resolution_uj / 1e6

    def _power_w(self, gpu: _Gpu) -> float | None:
        info = self._smi.amdsmi_get_power_info(gpu.handle)
        # current_socket_power: MI300 and later; average_socket_power: Navi, MI200 and
        # earlier; a field the GPU lacks is "N/A" (Python) or UINT32_MAX (the C struct)
        for field in ("current_socket_power", "average_socket_power"):
            watts = _number(info.get(field))
            if watts is not None and watts < UINT32_MAX:
                return watts
        return None

    def _metrics(self, gpu: _Gpu) -> dict[str, float]:
        smi, h = self._smi, gpu.handle
        out: dict[str, float] = {}
        activity = self._probe(smi.amdsmi_get_gpu_activity, h) or {}
        for src, dst in (("gfx_activity", "utilization"), ("umc_activity", "memory_utilization")):
            value = _number(activity.get(src))
            if value is not None:
                out[dst] = value / 100.0
        vram = self._probe(smi.amdsmi_get_gpu_vram_usage, h) or {}
        for src, dst in (("vram_used", "memory_used_bytes"), ("vram_total", "memory_total_bytes")):
            value = _number(vram.get(src))
            if value is not None:
                out[dst] = value * 2**20  # AMD SMI reports MB
        cap = self._probe(smi.amdsmi_get_power_cap_info, h) or {}
        value = _number(cap.get("power_cap"))
        if value is not None:
            out["power_limit_w"] = value / 1e6
        return out


def _count(reading: dict[str, Any]) -> int | None:
    """The accumulator of an ``amdsmi_get_energy_count`` result, under either name."""
    for key in ("energy_accumulator", "power"):
        raw = reading.get(key)
        if isinstance(raw, int):  # exact: a float loses counts near 2^64
            return raw
        value = _number(raw)
        if value is not None:
            return int(value)
    return None


def _describe(amdsmi: Any, exc: BaseException) -> str:
    code = error_code(amdsmi, exc)
    if code == status(amdsmi, "STATUS_NO_PERM", 10):
        return f"permission denied ({exc}): add the user to the render and video groups"
    return str(exc)

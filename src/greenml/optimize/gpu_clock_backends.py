"""The vendor halves of :class:`~greenml.optimize.gpu_clocks.ClockControl`: NVML and AMD SMI.

Each backend lists its visible GPUs, their supported graphics clocks and the
current one, locks and unlocks, and says which of its errors mean "no
permission" and "not supported" (see :mod:`greenml.optimize.gpu_clocks`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from typing import Any, Protocol

from greenml.errors import SensorUnavailable
from greenml.measure.sensors.amdsmi_gpu import error_code, status
from greenml.measure.sensors.amdsmi_gpu import visible_handles as amd_visible
from greenml.measure.sensors.nvml import visible_handles as nvml_visible
from greenml.optimize.amd_control import load_amdsmi
from greenml.optimize.gpu_control import load_nvml

log = logging.getLogger(__name__)

UNLOCKED = "unlocked"
NVML_CLOCK_GRAPHICS = 0  # nvmlClockType_t: NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1
NVML_HINT = (
    "locking GPU clocks needs root or CAP_SYS_ADMIN: run as root (sudo -E), or lock them "
    "yourself where sudo allows nvidia-smi (sudo nvidia-smi --lock-gpu-clocks=MHZ,MHZ; "
    "sudo nvidia-smi --reset-gpu-clocks)"
)
AMD_HINT = (
    "setting AMD performance levels needs root: run as root (sudo -E), or "
    "sudo amd-smi set --gpu N --perf-determinism MHZ (undo: sudo amd-smi set --gpu N "
    "--perf-level AUTO)"
)

Visible = list[tuple[int, Any, str, str]]  # (ordinal, handle, uuid, name)


class ClockBackend(Protocol):
    vendor: str
    hint: str
    errors: tuple[type[BaseException], ...]

    def visible(self) -> Visible: ...
    def supported_mhz(self, handle: Any) -> list[int]: ...
    def current_mhz(self, handle: Any) -> float | None: ...
    def original(self, handle: Any) -> str: ...
    def lock(self, handle: Any, mhz: int) -> None: ...
    def unlock(self, handle: Any, original: str) -> None: ...
    def check_permission(self, handle: Any) -> None: ...
    def classify(self, exc: BaseException) -> str: ...
    def close(self) -> None: ...


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class NvmlClocks:
    """NVIDIA graphics clocks through NVML (Volta and newer can lock them)."""

    vendor = "nvidia"
    hint = NVML_HINT

    def __init__(self, indices: Sequence[int] | None, nvml: Any | None, all_gpus: bool = False):
        self._nvml = load_nvml(nvml)
        self.errors: tuple[type[BaseException], ...] = (self._nvml.NVMLError,)
        try:
            self._nvml.nvmlInit()
        except self._nvml.NVMLError as exc:
            raise SensorUnavailable(f"NVML unavailable: {exc}") from exc
        try:
            if all_gpus:
                count = int(self._nvml.nvmlDeviceGetCount())
                handles = [self._nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
            else:
                handles = nvml_visible(self._nvml)
        except BaseException:
            self.close()
            raise
        chosen = range(len(handles)) if indices is None else list(dict.fromkeys(indices))
        self._visible: Visible = []
        for i in chosen:
            if not 0 <= i < len(handles):
                self.close()
                raise SensorUnavailable(f"GPU index {i} requested but {len(handles)} are visible")
            h = handles[i]
            uuid = _text(self._nvml.nvmlDeviceGetUUID(h))
            self._visible.append((i, h, uuid, _text(self._nvml.nvmlDeviceGetName(h))))

    def visible(self) -> Visible:
        return list(self._visible)

    def supported_mhz(self, handle: Any) -> list[int]:
        memory = max(int(m) for m in self._nvml.nvmlDeviceGetSupportedMemoryClocks(handle))
        return [int(c) for c in self._nvml.nvmlDeviceGetSupportedGraphicsClocks(handle, memory)]

    def current_mhz(self, handle: Any) -> float | None:
        try:
            return float(self._nvml.nvmlDeviceGetClockInfo(handle, NVML_CLOCK_GRAPHICS))
        except self._nvml.NVMLError:
            return None

    def original(self, handle: Any) -> str:
        return UNLOCKED  # NVML cannot read a lock back: the original is "not locked"

    def lock(self, handle: Any, mhz: int) -> None:
        self._nvml.nvmlDeviceSetGpuLockedClocks(handle, int(mhz), int(mhz))

    def unlock(self, handle: Any, original: str) -> None:
        self._nvml.nvmlDeviceResetGpuLockedClocks(handle)

    def check_permission(self, handle: Any) -> None:
        """Lock to the full supported range (no constraint), then reset: NVML checks root first."""
        clocks = self.supported_mhz(handle)
        self._nvml.nvmlDeviceSetGpuLockedClocks(handle, min(clocks), max(clocks))
        self._nvml.nvmlDeviceResetGpuLockedClocks(handle)

    def classify(self, exc: BaseException) -> str:
        if isinstance(exc, self._nvml.NVMLError_NoPermission):
            return "permission"
        if isinstance(exc, self._nvml.NVMLError_NotSupported):
            return "unsupported"
        return "other"

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._nvml.nvmlShutdown()


class AmdClocks:
    """AMD graphics clocks through AMD SMI performance levels (determinism mode caps GFX)."""

    vendor = "amd"
    hint = AMD_HINT

    def __init__(self, indices: Sequence[int] | None, amdsmi: Any | None, all_gpus: bool = False):
        self._smi = load_amdsmi(amdsmi)
        self.errors: tuple[type[BaseException], ...] = (self._smi.AmdSmiException,)
        try:
            self._smi.amdsmi_init()
        except self._smi.AmdSmiException as exc:
            raise SensorUnavailable(f"AMD SMI unavailable: {exc}") from exc
        try:
            if all_gpus:
                found = [(h, str(self._smi.amdsmi_get_gpu_device_uuid(h)))
                         for h in self._smi.amdsmi_get_processor_handles()]  # fmt: skip
            else:
                found = amd_visible(self._smi)
        except BaseException:
            self.close()
            raise
        chosen = range(len(found)) if indices is None else list(dict.fromkeys(indices))
        self._visible: Visible = []
        for i in chosen:
            if not 0 <= i < len(found):
                self.close()
                raise SensorUnavailable(f"GPU index {i} requested but {len(found)} are visible")
            h, uuid = found[i]
            name = self._smi.amdsmi_get_gpu_asic_info(h).get("market_name") or "AMD GPU"
            self._visible.append((i, h, uuid, str(name)))

    def visible(self) -> Visible:
        return list(self._visible)

    def _freq(self, handle: Any) -> dict[str, Any]:
        gfx = self._smi.AmdSmiClkType.GFX
        result: dict[str, Any] = self._smi.amdsmi_get_clk_freq(handle, gfx)
        return result

    def supported_mhz(self, handle: Any) -> list[int]:
        return [round(int(hz) / 1e6) for hz in self._freq(handle)["frequency"]]

    def current_mhz(self, handle: Any) -> float | None:
        freq = self._freq(handle)
        try:
            return int(freq["frequency"][int(freq["current"])]) / 1e6
        except (KeyError, IndexError, TypeError, ValueError):
            return None

    def original(self, handle: Any) -> str:
        return str(self._smi.amdsmi_get_gpu_perf_level(handle))

    def lock(self, handle: Any, mhz: int) -> None:
        self._smi.amdsmi_set_gpu_perf_determinism_mode(handle, int(mhz))

    def unlock(self, handle: Any, original: str) -> None:
        name = original.rsplit("_", 1)[-1].upper()
        levels = self._smi.AmdSmiDevPerfLevel
        if name in ("DETERMINISM", "MANUAL") or not hasattr(levels, name):
            # the clock behind such a level is not recorded: AUTO is the safe return
            log.warning("greenml: performance level %s cannot be put back; AUTO is set", original)
            name = "AUTO"
        self._smi.amdsmi_set_gpu_perf_level(handle, getattr(levels, name))

    def check_permission(self, handle: Any) -> None:
        """Set the performance level to the one in force: AMD SMI checks root first.

        A GPU already in determinism or manual mode is left alone (its clock is unknown).
        """
        name = self.original(handle).rsplit("_", 1)[-1].upper()
        levels = self._smi.AmdSmiDevPerfLevel
        if name not in ("DETERMINISM", "MANUAL") and hasattr(levels, name):
            self._smi.amdsmi_set_gpu_perf_level(handle, getattr(levels, name))

    def classify(self, exc: BaseException) -> str:
        code = error_code(self._smi, exc)
        if code == status(self._smi, "STATUS_NO_PERM", 10):
            return "permission"
        if code == status(self._smi, "STATUS_NOT_SUPPORTED", 2):
            return "unsupported"
        return "other"

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._smi.amdsmi_shut_down()

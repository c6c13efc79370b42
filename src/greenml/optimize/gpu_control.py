"""Read and set GPU power limits through NVML, and always put them back.

A power limit outlives the process that set it: it stays until someone resets
it. So before the first change the original limit of each GPU is written to a
JSON state file (keyed by GPU UUID); :meth:`GpuControl.restore` puts the
originals back and clears the file, and after a crash ``greenml gpu restore``
(:func:`~greenml.optimize.gpu_restore.restore_from_state`) does the same from
the file. An entry already in the file is never overwritten: after a crash
the file, not the GPU, knows the original.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from greenml.errors import (
    ConfigError,
    PowerLimitError,
    PowerLimitPermissionError,
    PowerLimitUnsupported,
    SensorError,
)
from greenml.measure.sensors.nvml import NvmlSensor, import_nvml, visible_handles
from greenml.optimize.cap_control import CapControl
from greenml.optimize.cap_control import GpuLimits as GpuLimits
from greenml.optimize.cap_control import check_limit as check_limit
from greenml.optimize.cap_control import save_original as save_original

# Testing hook: "package.module:factory" returning a pynvml-compatible object.
FAKE_NVML_ENV = "GREENML_FAKE_NVML"

PRIVILEGE_HINT = (
    "setting a GPU power limit needs root or the CAP_SYS_ADMIN capability: run as root "
    "(sudo -E), or grant it to this Python (sudo setcap cap_sys_admin+ep <python binary>), "
    "or set the limit yourself where sudo allows nvidia-smi (sudo nvidia-smi -i {uuid} -pl "
    "WATTS); --dry-run shows the plan without setting anything"
)


def load_nvml(nvml: Any | None = None) -> Any:
    """The NVML module: ``nvml`` if given, the ``GREENML_FAKE_NVML`` hook (tests), else pynvml."""
    if nvml is not None:
        return nvml
    hook = os.environ.get(FAKE_NVML_ENV)
    if hook:
        module, _, factory = hook.partition(":")
        return getattr(importlib.import_module(module), factory or "nvml")()

    return import_nvml()


class GpuControl(CapControl):
    """Reads and sets the power limits of the visible GPUs, and restores them.

    Args:
        indices: CUDA ordinals to control; None for every visible GPU.
        nvml: A ``pynvml``-compatible module (tests inject a fake).
        state_file: Where originals are kept (default :func:`default_state_file`).

    Raises:
        SensorUnavailable: No NVML or no GPU.
    """

    vendor = "nvidia"

    def __init__(
        self,
        indices: Sequence[int] | None = None,
        *,
        nvml: Any | None = None,
        state_file: str | Path | None = None,
    ) -> None:
        self._nvml = load_nvml(nvml)
        super().__init__(state_file, self._nvml.nvmlInit, self._nvml.NVMLError, "NVML")
        chosen = self._choose(visible_handles(self._nvml), indices)
        self._handles = {f"gpu{i}": (i, handle) for i, handle in chosen.items()}

    # -- reading -----------------------------------------------------------

    @property
    def nvml(self) -> Any:
        """The NVML module in use (a Meter over the same GPUs shares it)."""
        return self._nvml

    def sensor(self) -> NvmlSensor:
        """A sensor over the controlled GPUs (for the optimizer's own Meter)."""
        return NvmlSensor([i for i, _ in self._handles.values()], nvml=self._nvml)

    def get(self, key: str) -> GpuLimits:
        """The limits of one GPU (``gpu0`` ...)."""
        index, handle = self._handle(key)
        nvml = self._nvml
        try:
            low, high = nvml.nvmlDeviceGetPowerManagementLimitConstraints(handle)
            return GpuLimits(
                key=key,
                index=index,
                uuid=_text(nvml.nvmlDeviceGetUUID(handle)),
                name=_text(nvml.nvmlDeviceGetName(handle)),
                limit_w=nvml.nvmlDeviceGetPowerManagementLimit(handle) / 1000.0,
                default_w=nvml.nvmlDeviceGetPowerManagementDefaultLimit(handle) / 1000.0,
                min_w=low / 1000.0,
                max_w=high / 1000.0,
            )
        except nvml.NVMLError as exc:
            raise SensorError(f"{key}: cannot read its power limits: {exc}") from exc

    # -- plumbing ----------------------------------------------------------

    def _write(self, gpu: GpuLimits, limit_w: float) -> None:
        _, handle = self._handle(gpu.key)
        who = f"{gpu.key} ({gpu.name})"
        set_limit_by_handle(self._nvml, handle, limit_w, who, gpu.uuid, gpu.allowed)

    def _shutdown(self) -> None:
        self._nvml.nvmlShutdown()


def set_limit_by_handle(
    nvml: Any, handle: Any, limit_w: float, who: str, uuid: str, allowed: str | None
) -> None:
    """Set one GPU's limit through NVML, its errors mapped to what the user must do.

    Args:
        who: The GPU as messages name it.
        uuid: Its UUID (for the nvidia-smi hint: ordinals differ between tools).
        allowed: Its allowed range as text, named when NVML refuses the value.
    """
    try:
        nvml.nvmlDeviceSetPowerManagementLimit(handle, round(limit_w * 1000))
    except nvml.NVMLError_NoPermission as exc:
        raise PowerLimitPermissionError(
            f"{who}: NVML refused ({exc}); " + PRIVILEGE_HINT.format(uuid=uuid)
        ) from exc
    except nvml.NVMLError_NotSupported as exc:
        raise PowerLimitUnsupported(
            f"{who} does not allow setting its power limit ({exc})"
        ) from exc
    except nvml.NVMLError_InvalidArgument as exc:
        where = f"; allowed range: {allowed}" if allowed else ""
        raise ConfigError(f"power limit {limit_w:g} W refused by {who}{where}") from exc
    except nvml.NVMLError as exc:
        raise PowerLimitError(f"{who}: setting the power limit failed: {exc}") from exc


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)

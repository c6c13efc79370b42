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

import contextlib
import importlib
import logging
import os
import socket
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from greenml.errors import (
    ConfigError,
    PowerLimitError,
    PowerLimitPermissionError,
    PowerLimitUnsupported,
    SensorError,
    SensorUnavailable,
)
from greenml.measure.sensors.nvml import NvmlSensor, import_nvml, visible_handles
from greenml.optimize.gpu_state import (
    default_state_file,
    locked,
    read_state_at,
    write_state,
)

log = logging.getLogger(__name__)

# Testing hook: "package.module:factory" returning a pynvml-compatible object.
FAKE_NVML_ENV = "GREENML_FAKE_NVML"

PRIVILEGE_HINT = (
    "setting a GPU power limit needs root or the CAP_SYS_ADMIN capability: run as root "
    "(sudo -E), or grant it to this Python (sudo setcap cap_sys_admin+ep <python binary>), "
    "or set the limit yourself where sudo allows nvidia-smi (sudo nvidia-smi -i {uuid} -pl "
    "WATTS); --dry-run shows the plan without setting anything"
)


@dataclass(frozen=True)
class GpuLimits:
    """Power limits of one GPU, in watts.

    Attributes:
        key: ``gpu0`` ... as the Meter names it (the CUDA ordinal).
        index: The CUDA ordinal.
        uuid: NVML UUID, stable across reboots (the state file's key).
        limit_w: Limit in force now.
        default_w: Factory default limit.
        min_w: Lowest settable limit.
        max_w: Highest settable limit.
    """

    key: str
    index: int
    uuid: str
    name: str
    limit_w: float
    default_w: float
    min_w: float
    max_w: float

    @property
    def allowed(self) -> str:
        """The allowed range as people read it: ``100–300 W``."""
        return f"{self.min_w:g}–{self.max_w:g} W"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_limit(gpu: GpuLimits, limit_w: float) -> float:
    """``limit_w`` when ``gpu`` allows it; ConfigError naming the allowed range otherwise."""
    if not gpu.min_w <= limit_w <= gpu.max_w:
        raise ConfigError(
            f"power limit {limit_w:g} W is outside the allowed range of {gpu.key} "
            f"({gpu.name}): {gpu.allowed}"
        )
    return limit_w


def load_nvml(nvml: Any | None = None) -> Any:
    """The NVML module: ``nvml`` if given, the ``GREENML_FAKE_NVML`` hook (tests), else pynvml."""
    if nvml is not None:
        return nvml
    hook = os.environ.get(FAKE_NVML_ENV)
    if hook:
        module, _, factory = hook.partition(":")
        return getattr(importlib.import_module(module), factory or "nvml")()

    return import_nvml()


class GpuControl:
    """Reads and sets the power limits of the visible GPUs, and restores them.

    Args:
        indices: CUDA ordinals to control; None for every visible GPU.
        nvml: A ``pynvml``-compatible module (tests inject a fake).
        state_file: Where originals are kept (default :func:`default_state_file`).

    Raises:
        SensorUnavailable: No NVML or no GPU.
    """

    def __init__(
        self,
        indices: Sequence[int] | None = None,
        *,
        nvml: Any | None = None,
        state_file: str | Path | None = None,
    ) -> None:
        self._nvml = load_nvml(nvml)
        self.state_file = Path(state_file) if state_file is not None else default_state_file()
        try:
            self._nvml.nvmlInit()
        except self._nvml.NVMLError as exc:
            raise SensorUnavailable(f"NVML unavailable: {exc}") from exc
        self._open = True
        visible = visible_handles(self._nvml)
        chosen = range(len(visible)) if indices is None else list(dict.fromkeys(indices))
        self._handles: dict[str, tuple[int, Any]] = {}
        for i in chosen:
            if not 0 <= i < len(visible):
                self.close()
                raise ConfigError(f"GPU index {i} requested but {len(visible)} GPU(s) are visible")
            self._handles[f"gpu{i}"] = (i, visible[i])
        self._originals: dict[str, float] = {}  # uuid → original limit, for GPUs we changed

    # -- reading -----------------------------------------------------------

    @property
    def keys(self) -> list[str]:
        """The controlled GPUs (``gpu0`` ...)."""
        return list(self._handles)

    @property
    def nvml(self) -> Any:
        """The NVML module in use (a Meter over the same GPUs shares it)."""
        return self._nvml

    def sensor(self) -> NvmlSensor:
        """A sensor over the controlled GPUs (for the optimizer's own Meter)."""
        return NvmlSensor([i for i, _ in self._handles.values()], nvml=self._nvml)

    def limits(self) -> list[GpuLimits]:
        """Current, default and allowed limits of every controlled GPU."""
        return [self.get(key) for key in self._handles]

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

    # -- setting -----------------------------------------------------------

    def check_permission(self) -> None:
        """Raise PowerLimitPermissionError now rather than mid-training.

        Sets each GPU's limit to the value it already has: NVML checks the
        privilege first, and nothing changes.
        """
        for gpu in self.limits():
            self._nvml_set(gpu, gpu.limit_w)

    def set_limit(self, key: str, limit_w: float) -> GpuLimits:
        """Set one GPU's limit, after saving its original to the state file.

        Raises:
            ConfigError: ``limit_w`` outside the GPU's allowed range (named).
            PowerLimitPermissionError: Not root / CAP_SYS_ADMIN.
            PowerLimitUnsupported: The GPU does not allow it.
        """
        gpu = self.get(key)
        check_limit(gpu, limit_w)
        if gpu.uuid not in self._originals:
            self._originals[gpu.uuid] = self._save_original(gpu)
        self._nvml_set(gpu, limit_w)
        return gpu

    def set_all(self, limit_w: float) -> None:
        """The same limit on every controlled GPU (each checked first)."""
        for gpu in self.limits():
            check_limit(gpu, limit_w)
        for key in self._handles:
            self.set_limit(key, limit_w)

    def restore(self) -> dict[str, float]:
        """Put back the originals of the GPUs this object changed; {key: restored W}."""
        restored: dict[str, float] = {}
        if not self._originals:
            return restored
        with locked(self.state_file):
            saved = read_state_at(self.state_file)
            for key in self._handles:
                gpu = self.get(key)
                if gpu.uuid not in self._originals:
                    continue
                entry = saved.get(gpu.uuid)
                original = float(entry["original_limit_w"]) if entry else self._originals[gpu.uuid]
                self._nvml_set(gpu, original)
                restored[key] = original
                saved.pop(gpu.uuid, None)
                del self._originals[gpu.uuid]
            write_state(self.state_file, saved)
        return restored

    @property
    def changed(self) -> bool:
        """Whether some limit was set and not yet restored."""
        return bool(self._originals)

    def close(self) -> None:
        """Shut NVML down (once); call :meth:`restore` first."""
        if self._open:
            self._open = False
            with contextlib.suppress(Exception):
                self._nvml.nvmlShutdown()

    # -- plumbing ----------------------------------------------------------

    def _handle(self, key: str) -> tuple[int, Any]:
        try:
            return self._handles[key]
        except KeyError:
            raise ConfigError(f"no GPU {key!r} here ({', '.join(self._handles)})") from None

    def _nvml_set(self, gpu: GpuLimits, limit_w: float) -> None:
        _, handle = self._handle(gpu.key)
        who = f"{gpu.key} ({gpu.name})"
        set_limit_by_handle(self._nvml, handle, limit_w, who, gpu.uuid, gpu.allowed)

    def _save_original(self, gpu: GpuLimits) -> float:
        """Record ``gpu``'s original limit (unless already recorded); return the original."""
        return save_original(self.state_file, gpu)


def save_original(state_file: Path, gpu: GpuLimits, vendor: str = "nvidia") -> float:
    """Record ``gpu``'s limit as its original in ``state_file`` unless one is recorded.

    Returns the original: the recorded one when an earlier run left it there (after a
    crash the file, not the GPU, knows the original), else the limit now.
    """
    with locked(state_file):
        saved = read_state_at(state_file)
        entry = saved.get(gpu.uuid)
        if entry is not None:
            original = float(entry["original_limit_w"])
            if original != gpu.limit_w:
                log.warning(
                    "greenml: %s is at %g W but %s says its original limit is %g W "
                    "(an earlier run did not restore it); that original is kept",
                    gpu.key, gpu.limit_w, state_file, original,
                )  # fmt: skip
            return original
        saved[gpu.uuid] = {
            "original_limit_w": gpu.limit_w,
            "name": gpu.name,
            "index": gpu.index,
            "saved_at": datetime.now(timezone.utc).isoformat(),
            "pid": os.getpid(),
            "host": socket.gethostname(),
        }
        if vendor != "nvidia":
            saved[gpu.uuid]["vendor"] = vendor
        write_state(state_file, saved)
        return gpu.limit_w


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

"""Restore the original GPU power limits recorded in the state file (after a crash)."""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from greenml.errors import SensorUnavailable
from greenml.optimize.gpu_control import load_nvml, set_limit_by_handle
from greenml.optimize.gpu_state import default_state_file, locked, read_state_at, write_state


@dataclass(frozen=True)
class RestoreResult:
    """What :func:`restore_from_state` did: restored {uuid: W}, and UUIDs not found here."""

    state_file: str
    restored: dict[str, float]
    missing: list[str]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def restore_from_state(
    state_file: str | Path | None = None, *, nvml: Any | None = None, amdsmi: Any | None = None
) -> RestoreResult:
    """Restore every GPU listed in the state file (after a crash); the file is cleared.

    NVIDIA GPUs go back through NVML, AMD GPUs (entries marked ``"vendor": "amd"``)
    through AMD SMI. GPUs of the file that this machine does not have stay in it.

    Raises:
        ConfigError: The state file is unreadable.
        SensorUnavailable: NVML cannot be opened (and NVIDIA GPUs are listed).
        PowerLimitPermissionError: Not root / CAP_SYS_ADMIN.
    """
    from greenml.optimize.amd_control import restore_amd_entries

    path = Path(state_file) if state_file is not None else default_state_file()
    restored: dict[str, float] = {}
    if not path.exists():  # nothing saved: create no folder and no lock file
        return RestoreResult(str(path), {}, [])
    with locked(path):
        saved = read_state_at(path)
        if not saved:
            return RestoreResult(str(path), {}, [])
        try:
            # without AMD SMI here, its GPUs are not on this machine: they stay in the file
            with contextlib.suppress(SensorUnavailable):
                restored.update(restore_amd_entries(saved, amdsmi))
            nvidia = [u for u, e in saved.items() if e.get("vendor", "nvidia") == "nvidia"]
            if nvidia:
                restored.update(_restore_nvidia(saved, nvidia, nvml))
        finally:
            write_state(path, saved)
    return RestoreResult(str(path), restored, sorted(saved))


def _restore_nvidia(
    saved: dict[str, dict[str, Any]], uuids: list[str], nvml: Any | None
) -> dict[str, float]:
    """Restore the NVIDIA entries ``uuids`` of ``saved`` (removed from it); {uuid: W}."""
    restored: dict[str, float] = {}
    nvml = load_nvml(nvml)
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        raise SensorUnavailable(f"NVML unavailable: {exc}") from exc
    try:
        for uuid in uuids:
            entry = saved[uuid]
            try:
                handle = nvml.nvmlDeviceGetHandleByUUID(uuid)
            except nvml.NVMLError_NotFound:
                continue
            original = float(entry["original_limit_w"])
            who = f"{uuid} ({entry.get('name', 'GPU')})"
            set_limit_by_handle(nvml, handle, original, who, uuid, None)
            restored[uuid] = original
            del saved[uuid]
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()
    return restored

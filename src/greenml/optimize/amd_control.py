"""Read and set AMD GPU power caps through AMD SMI, and always put them back.

The same contract as :class:`~greenml.optimize.gpu_control.GpuControl` (the
power-limit optimizer drives either): before the first change the original cap
is written to the shared state file (keyed by UUID, marked ``"vendor": "amd"``),
:meth:`AmdGpuControl.restore` puts it back, and ``greenml gpu restore`` does the
same after a crash. AMD SMI takes and gives caps in microwatts
(``amdsmi_get_power_cap_info``, ``amdsmi_set_power_cap(handle, 0, µW)``); the
cap must lie in ``[min_power_cap, max_power_cap]``, and setting it needs root.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
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
from greenml.measure.sensors.amdsmi_gpu import (
    AmdGpuSensor,
    error_code,
    import_amdsmi,
    status,
    visible_handles,
)
from greenml.measure.sensors.discover import FAKE_AMDSMI_ENV, fake_module
from greenml.optimize.cap_control import CapControl, GpuLimits

AMD_PRIVILEGE_HINT = (
    "setting an AMD GPU power cap needs root: run as root (sudo -E), or set it yourself "
    "where sudo allows amd-smi (sudo amd-smi set --gpu {index} --power-cap WATTS); "
    "--dry-run shows the plan without setting anything"
)


def load_amdsmi(amdsmi: Any | None = None) -> Any:
    """``amdsmi`` if given, the ``GREENML_FAKE_AMDSMI`` hook (tests), else the bindings."""
    return amdsmi or fake_module(FAKE_AMDSMI_ENV) or import_amdsmi()


def set_cap(smi: Any, handle: Any, limit_w: float, who: str, index: int, allowed: str) -> None:
    """Set one GPU's power cap, AMD SMI's errors mapped to what the user must do."""
    try:
        smi.amdsmi_set_power_cap(handle, 0, round(limit_w * 1e6))
    except smi.AmdSmiException as exc:
        code = error_code(smi, exc)
        if code == status(smi, "STATUS_NO_PERM", 10):
            raise PowerLimitPermissionError(
                f"{who}: AMD SMI refused ({exc}); " + AMD_PRIVILEGE_HINT.format(index=index)
            ) from exc
        if code == status(smi, "STATUS_NOT_SUPPORTED", 2):
            raise PowerLimitUnsupported(f"{who} does not allow setting its power cap") from exc
        if code == status(smi, "STATUS_INVAL", 1):
            raise ConfigError(
                f"power cap {limit_w:g} W refused by {who}; allowed: {allowed}"
            ) from exc
        raise PowerLimitError(f"{who}: setting the power cap failed: {exc}") from exc


class AmdGpuControl(CapControl):
    """Reads and sets the power caps of the visible AMD GPUs, and restores them.

    Args:
        indices: HIP ordinals to control; None for every visible GPU.
        amdsmi: An ``amdsmi``-compatible module (tests inject a fake).
        state_file: Where originals are kept (shared with NVIDIA GPUs).

    Raises:
        SensorUnavailable: No AMD SMI or no GPU.
        ConfigError: An index that is not visible.
    """

    vendor = "amd"

    def __init__(
        self,
        indices: Sequence[int] | None = None,
        *,
        amdsmi: Any | None = None,
        state_file: str | Path | None = None,
    ) -> None:
        self._smi = load_amdsmi(amdsmi)
        super().__init__(state_file, self._smi.amdsmi_init, self._smi.AmdSmiException, "AMD SMI")
        chosen = self._choose(visible_handles(self._smi), indices, "AMD GPU(s)")
        self._handles = {f"gpu{i}": (i, *found) for i, found in chosen.items()}

    @property
    def amdsmi(self) -> Any:
        return self._smi

    def sensor(self) -> AmdGpuSensor:
        """A sensor over the controlled GPUs (for the optimizer's own Meter)."""
        return AmdGpuSensor([i for i, _, _ in self._handles.values()], amdsmi=self._smi)

    def get(self, key: str) -> GpuLimits:
        """Current, default and allowed caps of one GPU, in watts."""
        index, handle, uuid = self._handle(key)
        smi = self._smi
        try:
            cap = smi.amdsmi_get_power_cap_info(handle)
            name = smi.amdsmi_get_gpu_asic_info(handle).get("market_name") or "AMD GPU"
            return GpuLimits(
                key=key, index=index, uuid=uuid, name=str(name),
                limit_w=float(cap["power_cap"]) / 1e6,
                default_w=float(cap["default_power_cap"]) / 1e6,
                min_w=float(cap["min_power_cap"]) / 1e6,
                max_w=float(cap["max_power_cap"]) / 1e6,
            )  # fmt: skip
        except (smi.AmdSmiException, KeyError, TypeError, ValueError) as exc:
            raise SensorError(f"{key}: cannot read its power cap: {exc}") from exc

    def _write(self, gpu: GpuLimits, limit_w: float) -> None:
        _, handle, _ = self._handle(gpu.key)
        set_cap(self._smi, handle, limit_w, f"{gpu.key} ({gpu.name})", gpu.index, gpu.allowed)

    def _shutdown(self) -> None:
        self._smi.amdsmi_shut_down()


def restore_amd_entries(
    saved: dict[str, dict[str, Any]], amdsmi: Any | None = None
) -> dict[str, float]:
    """Restore the AMD entries of a state file's content (removed from ``saved``); {uuid: W}.

    Raises:
        SensorUnavailable: AMD SMI cannot be opened.
        PowerLimitPermissionError: Not root.
    """
    wanted = {u: e for u, e in saved.items() if e.get("vendor") == "amd"}
    if not wanted:
        return {}
    smi = load_amdsmi(amdsmi)
    try:
        smi.amdsmi_init()
    except smi.AmdSmiException as exc:
        raise SensorUnavailable(f"AMD SMI unavailable: {exc}") from exc
    restored: dict[str, float] = {}
    try:
        by_uuid = {str(smi.amdsmi_get_gpu_device_uuid(h)): h
                   for h in smi.amdsmi_get_processor_handles()}  # fmt: skip
        for uuid, entry in wanted.items():
            handle = by_uuid.get(uuid)
            if handle is None:
                continue
            original = float(entry["original_limit_w"])
            who = f"{uuid} ({entry.get('name', 'AMD GPU')})"
            set_cap(smi, handle, original, who, int(entry.get("index", 0)), "")
            restored[uuid] = original
            del saved[uuid]
    finally:
        with contextlib.suppress(Exception):
            smi.amdsmi_shut_down()
    return restored

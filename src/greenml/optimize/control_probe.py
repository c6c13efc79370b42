"""``greenml doctor``'s check of GPU control: may the power-limit optimizer set limits here?"""

from __future__ import annotations

from greenml.errors import (
    PowerLimitError,
    PowerLimitPermissionError,
    SensorError,
    SensorUnavailable,
)
from greenml.measure.doctor import (
    ABSENT,
    AMD_VENDOR,
    NVIDIA_VENDOR,
    PERMISSION,
    UNSUPPORTED,
    USABLE,
    Finding,
    Machine,
)
from greenml.optimize.amd_control import AmdGpuControl
from greenml.optimize.gpu_control import GpuControl


def probe_power_limits(machine: Machine) -> Finding:
    """Whether the power-limit optimizer may set limits here.

    Each GPU's limit is set to the value it has (the driver checks the privilege
    first), so nothing changes.
    """
    title = "GPU power limits (power-limit optimizer, greenml gpu set-limit)"
    opened: list[GpuControl | AmdGpuControl] = []
    for vendor, name in ((NVIDIA_VENDOR, "pynvml"), (AMD_VENDOR, "amdsmi")):
        if name not in machine.modules and vendor not in machine.pci_vendors():
            continue
        try:
            module = machine.module(name)
            control: GpuControl | AmdGpuControl = (
                GpuControl(nvml=module) if name == "pynvml" else AmdGpuControl(amdsmi=module)
            )
        except (ImportError, SensorUnavailable):
            continue
        opened.append(control)
    if not opened:
        return Finding("power-limits", title, ABSENT, "no GPU that greenml can open")
    try:
        for control in opened:
            control.check_permission()
    except PowerLimitPermissionError as exc:
        reason, _, fix = str(exc).partition("; ")
        return Finding("power-limits", title, PERMISSION, reason, fix)
    except (PowerLimitError, SensorError) as exc:
        return Finding("power-limits", title, UNSUPPORTED, str(exc))
    finally:
        for control in opened:
            control.close()
    keys = ", ".join(k for c in opened for k in c.keys)
    return Finding("power-limits", title, USABLE, f"settable on {keys}")

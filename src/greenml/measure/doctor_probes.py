"""One probe per sensor backend, and :func:`diagnose_machine` that runs them all.

A probe opens its backend the way a run would and turns what happens into a
:class:`~greenml.measure.doctor.Finding` with the exact command that fixes it.
"""

from __future__ import annotations

from collections.abc import Callable

from greenml.errors import SensorUnavailable
from greenml.measure.doctor import (
    ABSENT,
    AMD_VENDOR,
    DRIVER_MISSING,
    NOT_INSTALLED,
    NVIDIA_VENDOR,
    PERMISSION,
    UNSUPPORTED,
    DeviceReport,
    Finding,
    Machine,
    classify,
    usable,
)

Probe = Callable[[Machine], Finding]

NVML_FIX_DRIVER = (
    "install the NVIDIA driver (Ubuntu: sudo ubuntu-drivers install; then reboot), "
    "then check with: nvidia-smi"
)
NVML_FIX_PACKAGE = "pip install 'nvidia-ml-py>=12.535'"
AMDSMI_FIX_DRIVER = (
    "install ROCm with the amdgpu driver (sudo amdgpu-install --usecase=rocm; then reboot), "
    "then check with: amd-smi list"
)
AMDSMI_FIX_PACKAGE = "pip install /opt/rocm/share/amd_smi  (the amdsmi bindings of your ROCm)"
RAPL_FIX_MODULE = "sudo modprobe intel_rapl_msr   (AMD Zen CPUs use the same driver)"
RAPL_FIX_CHMOD = (
    "sudo chmod a+r /sys/class/powercap/intel-rapl:*/energy_uj "
    "/sys/class/powercap/intel-rapl:*/intel-rapl:*/energy_uj"
)
APPLE_FIX_PACKAGE = "pip install 'zeus-apple-silicon>=1.0'"
JETSON_FIX = "sudo chmod a+r /sys/class/hwmon/hwmon*/curr*_input /sys/class/hwmon/hwmon*/in*_input"


def probe_nvml(machine: Machine) -> Finding:
    title = "NVIDIA GPUs (NVML)"
    pynvml = machine.modules.get("pynvml")
    has_pci = NVIDIA_VENDOR in machine.pci_vendors()
    if pynvml is None and not has_pci:
        return Finding("nvml", title, ABSENT, "no NVIDIA GPU on the PCI bus")
    try:
        nvml_module = machine.module("pynvml")
    except ImportError:
        return Finding("nvml", title, NOT_INSTALLED, "nvidia-ml-py is not installed",
                       NVML_FIX_PACKAGE)  # fmt: skip
    from greenml.measure.sensors.nvml import NvmlSensor

    try:
        return usable("nvml", title, NvmlSensor(nvml=nvml_module))
    except SensorUnavailable as exc:
        status = classify(exc)
        fix = NVML_FIX_DRIVER if status in (DRIVER_MISSING, UNSUPPORTED) and has_pci else ""
        return Finding("nvml", title, status, str(exc), fix)


def probe_amdsmi(machine: Machine) -> Finding:
    title = "AMD GPUs (AMD SMI)"
    injected = machine.modules.get("amdsmi")
    has_pci = AMD_VENDOR in machine.pci_vendors()
    if injected is None and not has_pci:
        return Finding("amdsmi", title, ABSENT, "no AMD GPU on the PCI bus")
    if injected is None and not machine.path("/dev/kfd").exists():
        return Finding("amdsmi", title, DRIVER_MISSING,
                       "an AMD GPU is on the PCI bus but /dev/kfd is missing (amdgpu "
                       "driver not loaded)", AMDSMI_FIX_DRIVER)  # fmt: skip
    try:
        module = machine.module("amdsmi")
    except ImportError:
        return Finding("amdsmi", title, NOT_INSTALLED, "the amdsmi Python package is not "
                       "installed", AMDSMI_FIX_PACKAGE)  # fmt: skip
    from greenml.measure.sensors.amdsmi_gpu import AmdGpuSensor

    try:
        return usable("amdsmi", title, AmdGpuSensor(amdsmi=module))
    except SensorUnavailable as exc:
        status = classify(exc)
        fix = "sudo usermod -aG render,video $USER  (then log in again)" if (
            status == PERMISSION) else AMDSMI_FIX_DRIVER
        return Finding("amdsmi", title, status, str(exc), fix)


def probe_rapl(machine: Machine) -> Finding:
    title = "CPU package / DRAM energy (powercap RAPL)"
    from greenml.measure.sensors.rapl import RaplSensor

    root = machine.path("/sys/class/powercap")
    amd = machine.cpu_vendor() == "AuthenticAMD"
    try:
        return usable("rapl", title, RaplSensor(root, amd=amd))
    except SensorUnavailable as exc:
        if classify(exc) == PERMISSION:
            return Finding("rapl", title, PERMISSION, str(exc), RAPL_FIX_CHMOD)
        if machine.system != "linux":
            return Finding("rapl", title, UNSUPPORTED, f"powercap is Linux only ({machine.system})")
        flags = machine.cpu_flags()
        if flags and "rapl" not in flags:
            return Finding("rapl", title, UNSUPPORTED,
                           "this CPU shows no RAPL to the kernel (no 'rapl' flag in "
                           "/proc/cpuinfo): virtual machines usually hide the RAPL MSRs; "
                           "nothing to fix from inside this machine")  # fmt: skip
        return Finding("rapl", title, DRIVER_MISSING, f"{exc}", RAPL_FIX_MODULE)


def probe_amd_energy(machine: Machine) -> Finding:
    title = "AMD CPU socket energy (amd_energy hwmon)"
    from greenml.measure.sensors.hwmon import AMD_ENERGY_FIX, HwmonEnergySensor

    if machine.cpu_vendor() not in ("AuthenticAMD", ""):
        return Finding("amd_energy", title, ABSENT, "not an AMD CPU")
    try:
        return usable("amd_energy", title, HwmonEnergySensor(machine.path("/sys/class/hwmon")))
    except SensorUnavailable as exc:
        status = classify(exc)
        if status == PERMISSION:
            return Finding("amd_energy", title, status, str(exc),
                           "sudo chmod a+r /sys/class/hwmon/hwmon*/energy*_input")  # fmt: skip
        flags = machine.cpu_flags()
        if flags and "rapl" not in flags:
            return Finding("amd_energy", title, UNSUPPORTED, f"{exc}; this CPU shows no RAPL "
                           "MSRs here (virtual machine)")  # fmt: skip
        return Finding("amd_energy", title, DRIVER_MISSING, str(exc), AMD_ENERGY_FIX)


def probe_cpu_model(machine: Machine) -> Finding:
    from greenml.hardware import cpu_model_name
    from greenml.measure.sensors.cpu_model import CpuModelSensor

    name = cpu_model_name(machine.path("/proc/cpuinfo")) or None
    sensor = CpuModelSensor(cpu_name=name)
    fix = "" if sensor.tdp.source != "default" else "export GREENML_CPU_TDP_W=<TDP of all sockets>"
    found = usable("cpu-model", "CPU model (utilization × TDP), the fallback", sensor,
                   reason=sensor.tdp.note)  # fmt: skip
    return Finding(found.sensor, found.title, found.status, found.reason, fix, found.devices)


def probe_dram_model(machine: Machine) -> Finding:
    from greenml.measure.sensors.cpu_model import DramModelSensor

    return usable("dram-model", "DRAM model (W per GB in use), the fallback", DramModelSensor())


def probe_apple(machine: Machine) -> Finding:
    title = "Apple Silicon CPU/GPU/ANE/DRAM (IOReport, no root)"
    injected = machine.modules.get("zeus_apple_silicon")
    if injected is None and not (machine.system == "darwin" and machine.arch == "arm64"):
        return Finding("ioreport", title, ABSENT, "not an Apple Silicon Mac")
    from greenml.measure.sensors.apple import AppleSiliconSensor

    try:
        module = machine.module("zeus_apple_silicon")
    except ImportError:
        return Finding("ioreport", title, NOT_INSTALLED, "zeus-apple-silicon is not installed "
                       "(greenml reads IOReport through it)", APPLE_FIX_PACKAGE)  # fmt: skip
    try:
        return usable("ioreport", title, AppleSiliconSensor(module=module))
    except SensorUnavailable as exc:
        return Finding("ioreport", title, classify(exc), str(exc), APPLE_FIX_PACKAGE)


def probe_powermetrics(machine: Machine) -> Finding:
    title = "Apple CPU/GPU/ANE power (powermetrics, root), IOReport's fallback"
    if machine.system != "darwin":
        return Finding("powermetrics", title, ABSENT, "not macOS")
    if machine.which("powermetrics") is None:
        return Finding("powermetrics", title, UNSUPPORTED, "powermetrics is not on PATH")
    if not machine.is_root:
        return Finding("powermetrics", title, PERMISSION, "powermetrics needs root",
                       "sudo -E greenml run -- <command>")  # fmt: skip
    from greenml.measure.sensors.apple import PowermetricsSensor

    return usable("powermetrics", title, PowermetricsSensor(source=None))


def probe_jetson(machine: Machine) -> Finding:
    title = "NVIDIA Jetson board rails (INA3221)"
    from greenml.measure.sensors.jetson import is_jetson, jetson_sensor

    if not is_jetson(machine.root):
        return Finding("jetson", title, ABSENT, "not a Jetson board")
    try:
        return usable("jetson", title, jetson_sensor(machine.root))
    except SensorUnavailable as exc:
        status = classify(exc)
        if machine.which("tegrastats") is not None:
            from greenml.measure.sensors.jetson import TegrastatsSensor

            return usable("jetson", title, TegrastatsSensor(source=None),
                          reason=f"INA3221 sysfs not readable ({exc}); tegrastats is used")
        fix = JETSON_FIX if status == PERMISSION else "sudo apt install nvidia-l4t-tools"
        return Finding("jetson", title, status, str(exc), fix)


def probe_hwmon_power(machine: Machine) -> Finding:
    title = "Board power monitors (hwmon power / INA rails)"
    from greenml.measure.sensors.hwmon import generic_power_sensor

    try:
        return usable("hwmon-power", title, generic_power_sensor(machine.path("/sys/class/hwmon")))
    except SensorUnavailable as exc:
        status = classify(exc)
        if status == PERMISSION:
            return Finding("hwmon-power", title, status, str(exc),
                           "sudo chmod a+r /sys/class/hwmon/hwmon*/power*_input")  # fmt: skip
        return Finding("hwmon-power", title, ABSENT, str(exc))


PROBES: tuple[Probe, ...] = (
    probe_nvml,
    probe_amdsmi,
    probe_rapl,
    probe_amd_energy,
    probe_apple,
    probe_powermetrics,
    probe_jetson,
    probe_hwmon_power,
    probe_cpu_model,
    probe_dram_model,
)


def diagnose_machine(machine: Machine | None = None) -> list[Finding]:
    """Every sensor backend, usable or not, on ``machine`` (this one by default), then the
    configured node meter (:mod:`greenml.measure.node.doctor`)."""
    from greenml.measure.node.doctor import probe_node_meter

    machine = machine or Machine()
    return [*(probe(machine) for probe in PROBES), probe_node_meter(machine)]


def run_plan() -> tuple[list[DeviceReport], list[str]]:
    """What ``greenml run`` measures on this machine: its devices and the notes it would print.

    Opens the sensors exactly as a run does (machine scope), then closes them.
    """
    from greenml.measure.sensors.discover import discover_sensors

    sensors, notes = discover_sensors(None, cpu=True)
    try:
        return [DeviceReport.of(d) for s in sensors for d in s.devices], notes
    finally:
        for sensor in sensors:
            sensor.close()

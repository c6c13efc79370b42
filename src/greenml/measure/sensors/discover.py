"""Choose the sensors of this machine, best first, every fallback labelled in the notes.

- GPUs: NVIDIA through NVML, else AMD through AMD SMI.
- A platform that measures the whole SoC or board replaces the CPU and DRAM
  sensors: Apple Silicon (IOReport, else ``powermetrics`` as root), NVIDIA
  Jetson boards (INA3221 rails, else ``tegrastats``) and other ARM/RISC-V
  boards with a hwmon power monitor.
- CPUs: powercap RAPL (Intel, or AMD labelled as such), else the ``amd_energy``
  hwmon driver, else the CPU model; DRAM from RAPL where it has a DRAM domain,
  else the DRAM model.
- When this process cannot read the counters itself (RAPL is root-only since
  Linux 5.10; no GPU library in a container) and a node agent (``greenml
  agent``) is there, its counters, each device's note saying ``via greenml agent``.

Testing hooks: ``GREENML_SYS_ROOT`` moves every sysfs/procfs path under another
root (a fake tree); ``GREENML_FAKE_AMDSMI`` and ``GREENML_FAKE_APPLE`` name a
``module:factory`` that returns a fake ``amdsmi`` / ``zeus_apple_silicon``.

Lazy imports: each sensor's module (NVML, AMD SMI, psutil for the CPU model, the
Jetson and hwmon readers, the agent client) is imported where that sensor is tried,
so that ``greenml run`` on a machine without it does not pay for it.
"""

from __future__ import annotations

import importlib
import os
import platform
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from greenml.errors import ConfigError, SensorUnavailable

if TYPE_CHECKING:
    from greenml.measure.sensors.base import Sensor
    from greenml.measure.sensors.cpu_model import Scope

RAPL_PROCESS_NOTE = (
    "RAPL counts whole CPU packages: the cpu figures include every process on the "
    "machine, not only the measured process tree"
)
SOC_PROCESS_NOTE = (
    "{what} measures the whole {unit}: its figures include every process on the "
    "machine, not only the measured process tree"
)
SYS_ROOT_ENV = "GREENML_SYS_ROOT"
FAKE_AMDSMI_ENV = "GREENML_FAKE_AMDSMI"
FAKE_APPLE_ENV = "GREENML_FAKE_APPLE"
# Machines that are boards: their hwmon power monitors measure the board (not on servers,
# where hwmon power channels belong to GPUs and PSUs).
EDGE_ARCHES = ("aarch64", "armv7l", "armv6l", "riscv64")


def sys_root() -> Path:
    """Where /sys and /proc are read from: ``/``, or ``$GREENML_SYS_ROOT`` (tests)."""
    return Path(os.environ.get(SYS_ROOT_ENV) or "/")


def fake_module(env: str) -> Any | None:
    """The fake module a testing hook names (``package.module:factory``), else None."""
    hook = os.environ.get(env)
    if not hook:
        return None
    module, _, factory = hook.partition(":")
    return getattr(importlib.import_module(module), factory or "module")()


def discover_platform_sensors(
    root: Path, arch: str | None = None
) -> tuple[list[Sensor], list[str]] | None:
    """Sensors of a whole SoC or board; None on other machines.

    Apple Silicon (IOReport, else powermetrics), Jetson (INA3221, else
    tegrastats), and other ARM/RISC-V boards with a hwmon power monitor. No
    sensors with a note: such a platform whose sensors cannot be opened (the
    CPU sensors are used instead, and the note says why).
    """
    apple = fake_module(FAKE_APPLE_ENV)
    if apple is not None or (sys.platform == "darwin" and platform.machine() == "arm64"):
        from greenml.measure.sensors.apple import AppleSiliconSensor, PowermetricsSensor

        try:
            return [AppleSiliconSensor(module=apple)], []
        except SensorUnavailable as exc:
            note = f"IOReport not used: {exc}"
            if os.geteuid() == 0 and shutil.which("powermetrics"):
                return [PowermetricsSensor()], [f"{note}; powermetrics used (power sampled)"]
            return [], [note]  # the CPU sensors below are used, and this says why
    if _may_be_jetson(root, arch) and (jetson := _jetson_sensors(root)) is not None:
        return jetson
    if (arch or platform.machine()) in EDGE_ARCHES:
        from greenml.measure.sensors.hwmon import generic_power_sensor

        try:
            board = generic_power_sensor(root / "sys/class/hwmon")
        except SensorUnavailable:
            return None
        return [board], ["board power from its hwmon power monitor; CPU and DRAM are inside it"]
    return None


def _jetson_sensors(root: Path) -> tuple[list[Sensor], list[str]] | None:
    """The INA3221 rails, else tegrastats, else none with a note; None: not a Jetson."""
    from greenml.measure.sensors.jetson import TegrastatsSensor, is_jetson, jetson_sensor

    if not is_jetson(root):
        return None
    try:
        return [jetson_sensor(root)], []
    except SensorUnavailable as exc:
        note = f"Jetson INA3221 rails not used: {exc}"
        if shutil.which("tegrastats"):
            return [TegrastatsSensor()], [f"{note}; tegrastats used (board input power)"]
        return [], [note]


def _may_be_jetson(root: Path, arch: str | None) -> bool:
    """Jetson boards are aarch64: elsewhere the Jetson reader is not imported (a fake tree is)."""
    return root != Path("/") or (arch or platform.machine()) == "aarch64"


def discover_cpu_sensors(
    scope: str = "machine",
    pid: int | None = None,
    rapl_root: str | Path | None = None,
    marker: str | None = None,
    root: Path | None = None,
) -> tuple[list[Sensor], list[str]]:
    """The CPU (and DRAM, or whole-SoC) sensors to use, and notes to show the user once.

    A whole-SoC or board sensor comes first (see the module docstring). Else
    RAPL counters, else ``amd_energy``; without them (no domains, access denied)
    the CPU and DRAM models are used, and the reasons are notes. When RAPL has
    no DRAM domain (AMD, most laptops), DRAM comes from the model.

    Args:
        scope: ``machine`` or ``process`` (the process tree rooted at ``pid``).
        pid: Root of the process tree; the current process by default.
        rapl_root: The powercap class directory (default: under ``root``).
        marker: ``NAME=VALUE`` carried by the command's processes, which the
            process-scope models follow even after they leave the tree.
        root: Where /sys and /proc are read (default :func:`sys_root`).

    Raises:
        ConfigError: ``scope`` is neither ``machine`` nor ``process``.
    """
    if scope not in ("machine", "process"):
        raise ConfigError(f"CPU scope must be 'machine' or 'process', got {scope!r}")
    model_scope = cast("Scope", scope)
    root = root if root is not None else sys_root()
    whole = discover_platform_sensors(root)
    if whole is not None and whole[0]:
        sensors, notes = whole
        if scope == "process":
            notes.append(SOC_PROCESS_NOTE.format(what=sensors[0].devices[0].name, unit="chip"))
        return sensors, notes
    notes = [] if whole is None else list(whole[1])
    from greenml.measure.sensors.cpu_model import (
        GREEN_ALGORITHMS_W_PER_GB,
        CpuModelSensor,
        DramModelSensor,
    )

    counters = _cpu_counters(root, rapl_root, notes)
    if counters is None:
        from greenml.hardware import cpu_model_name

        # the CPU's name (hence its TDP, AMD's or Intel's) from the same /proc as the rest
        name = None if root == Path("/") else cpu_model_name(root / "proc/cpuinfo") or None
        cpu = CpuModelSensor(scope=model_scope, pid=pid, marker=marker, cpu_name=name)
        return [cpu, DramModelSensor(scope=model_scope, pid=pid, marker=marker)], notes
    sensors = [counters]
    if scope == "process":
        notes.append(RAPL_PROCESS_NOTE)
    if not any(d.component == "dram" for d in counters.devices):
        notes.append(
            f"RAPL has no DRAM domain here; DRAM is estimated at {GREEN_ALGORITHMS_W_PER_GB:g} "
            "W/GB (Green Algorithms)"
        )
        sensors.append(DramModelSensor(scope=model_scope, pid=pid, marker=marker))
    return sensors, notes


def _cpu_counters(root: Path, rapl_root: str | Path | None, notes: list[str]) -> Sensor | None:
    """RAPL, else amd_energy; None (with the reasons in ``notes``) when neither opens."""
    from greenml.measure.sensors.hwmon import HwmonEnergySensor
    from greenml.measure.sensors.rapl import RaplSensor, is_amd_cpu

    amd = is_amd_cpu(root / "proc/cpuinfo")
    try:
        return RaplSensor(rapl_root or root / "sys/class/powercap", amd=amd)
    except SensorUnavailable as exc:
        rapl_note = f"RAPL not used: {exc}"
    if amd:
        try:
            sensor = HwmonEnergySensor(root / "sys/class/hwmon")
        except SensorUnavailable as exc:
            rapl_note = f"{rapl_note}; amd_energy not used: {exc}"
        else:
            notes.append(f"{rapl_note}; the amd_energy hwmon driver is used")
            return sensor
    agent = via_agent(("cpu", "dram"), None, rapl_note, notes)
    if agent is None:
        notes.append(rapl_note)
    return agent


def via_agent(
    components: tuple[str, ...], gpus: Sequence[int] | None, why: str, notes: list[str]
) -> Sensor | None:
    """The node agent's counters when this process cannot read them and an agent is there.

    ``why`` (the reason the direct read failed) goes into ``notes`` with what the agent
    did; with no agent at all nothing is added, and the caller says ``why`` itself.
    """
    from greenml.agent.socket_path import agent_present

    if agent_present() is None:  # no agent: its client is not imported
        return None
    from greenml.agent.sensor import agent_sensor

    try:
        sensor = agent_sensor(components, gpus)
    except SensorUnavailable as exc:
        notes.append(f"{why}; greenml agent not used: {exc}")
        return None
    if sensor is not None:
        first = why.split(". ")[0].removeprefix("RAPL not used: ")
        notes.append(f"{first}: read via the greenml agent at {sensor.path} instead")
    return sensor


def discover_gpu_sensors(gpus: Sequence[int] | None) -> tuple[list[Sensor], list[str]]:
    """NVIDIA GPUs through NVML, else AMD GPUs through AMD SMI.

    Raises:
        SensorUnavailable: ``gpus`` names GPUs and neither library can open them.
    """
    from greenml.measure.sensors.nvml import NvmlSensor

    amd = fake_module(FAKE_AMDSMI_ENV)
    try:
        if amd is None:
            return [NvmlSensor(indices=gpus)], []
    except SensorUnavailable as exc:
        nvml_error = exc
    else:
        nvml_error = SensorUnavailable("NVML not tried: a fake AMD SMI is installed")
    from greenml.measure.sensors.amdsmi_gpu import AmdGpuSensor

    try:
        return [AmdGpuSensor(indices=gpus, amdsmi=amd)], []
    except SensorUnavailable as exc:
        agent_notes: list[str] = []
        agent = via_agent(("gpu",), gpus, f"{nvml_error}; {exc}", agent_notes)
        if agent is not None:
            return [agent], agent_notes
        if gpus:  # the user asked for these GPUs: not having them is an error
            raise SensorUnavailable(f"{nvml_error}; {exc}") from exc
        return [], [f"no GPU measured: {nvml_error}; {exc}"]


def discover_sensors(
    gpus: Sequence[int] | None,
    cpu: bool,
    cpu_scope: str = "machine",
    pid: int | None = None,
    marker: str | None = None,
) -> tuple[list[Sensor], list[str]]:
    """The machine's sensors, and notes on what could not be measured and why.

    A configured node meter (:mod:`greenml.measure.node`) comes last, as device ``node0``.
    """
    sensors: list[Sensor] = []
    notes: list[str] = []
    if gpus is None or len(gpus) > 0:
        gpu_sensors, notes = discover_gpu_sensors(gpus)
        if cpu_scope == "process" and pid is not None:  # a shared GPU: the run's share
            from greenml.measure.sensors.nvml_share import share_for_process

            gpu_sensors = [share_for_process(s, pid, marker) for s in gpu_sensors]
        sensors.extend(gpu_sensors)
    if cpu:
        cpu_sensors, cpu_notes = discover_cpu_sensors(scope=cpu_scope, pid=pid, marker=marker)
        keys = {d.key for s in sensors for d in s.devices}
        for sensor in cpu_sensors:
            if keys & {d.key for d in sensor.devices}:  # Apple's gpu0 next to a discrete one
                cpu_notes.append(f"{type(sensor).__name__} not used: its devices clash with GPUs")
                sensor.close()
                continue
            sensors.append(sensor)
        notes.extend(cpu_notes)
    from greenml.measure.node.discover import node_sensors_safely

    node, node_notes = node_sensors_safely(sys_root())  # beside the components, not among them
    sensors.extend(node)
    notes.extend(node_notes)
    return sensors, notes

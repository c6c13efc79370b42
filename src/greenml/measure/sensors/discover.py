"""Choose the CPU and DRAM sensors of this machine: RAPL counters, else the model."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import cast

from greenml.errors import ConfigError, SensorUnavailable
from greenml.measure.sensors.base import Sensor
from greenml.measure.sensors.cpu_model import (
    GREEN_ALGORITHMS_W_PER_GB,
    CpuModelSensor,
    DramModelSensor,
    Scope,
)
from greenml.measure.sensors.nvml import NvmlSensor
from greenml.measure.sensors.rapl import RaplSensor

RAPL_PROCESS_NOTE = (
    "RAPL counts whole CPU packages: the cpu figures include every process on the "
    "machine, not only the measured process tree"
)


def discover_cpu_sensors(
    scope: str = "machine",
    pid: int | None = None,
    rapl_root: str | Path = "/sys/class/powercap",
    marker: str | None = None,
) -> tuple[list[Sensor], list[str]]:
    """The CPU (and DRAM) sensors to use, and notes to show the user once.

    RAPL counters are preferred. Without them (no domains, access denied) the
    CPU and DRAM models are used, and the reason is the first note. When RAPL
    has no DRAM domain (AMD, most laptops), DRAM comes from the model.

    Args:
        scope: ``machine`` or ``process`` (the process tree rooted at ``pid``).
        pid: Root of the process tree; the current process by default.
        rapl_root: The powercap class directory.
        marker: ``NAME=VALUE`` carried by the command's processes, which the
            process-scope models follow even after they leave the tree.

    Raises:
        ConfigError: ``scope`` is neither ``machine`` nor ``process``.
    """
    if scope not in ("machine", "process"):
        raise ConfigError(f"CPU scope must be 'machine' or 'process', got {scope!r}")
    model_scope = cast(Scope, scope)
    notes: list[str] = []
    try:
        rapl = RaplSensor(rapl_root)
    except SensorUnavailable as exc:
        notes.append(f"RAPL not used: {exc}")
        cpu = CpuModelSensor(scope=model_scope, pid=pid, marker=marker)
        return [cpu, DramModelSensor(scope=model_scope, pid=pid, marker=marker)], notes
    sensors: list[Sensor] = [rapl]
    if scope == "process":
        notes.append(RAPL_PROCESS_NOTE)
    if not any(d.component == "dram" for d in rapl.devices):
        notes.append(
            f"RAPL has no DRAM domain here; DRAM is estimated at {GREEN_ALGORITHMS_W_PER_GB:g} "
            "W/GB (Green Algorithms)"
        )
        sensors.append(DramModelSensor(scope=model_scope, pid=pid, marker=marker))
    return sensors, notes


def discover_sensors(
    gpus: Sequence[int] | None,
    cpu: bool,
    cpu_scope: str = "machine",
    pid: int | None = None,
    marker: str | None = None,
) -> tuple[list[Sensor], list[str]]:
    """The machine's sensors, and notes on what could not be measured and why."""
    sensors: list[Sensor] = []
    notes: list[str] = []
    if gpus is None or len(gpus) > 0:
        try:
            sensors.append(NvmlSensor(indices=gpus))
        except SensorUnavailable as exc:
            if gpus:  # the user asked for these GPUs: not having them is an error
                raise
            notes.append(f"no GPU measured: {exc}")
    if cpu:
        cpu_sensors, cpu_notes = discover_cpu_sensors(scope=cpu_scope, pid=pid, marker=marker)
        sensors.extend(cpu_sensors)
        notes.extend(cpu_notes)
    return sensors, notes

"""P_max of the sweep's cost: the power that turns a second into joules.

Zeus uses the GPU's largest power limit. On a GPU the sweep does the same
(NVML's highest settable limit, else the TDP of the GPU table); on a CPU it
uses the package TDP when it is known (given, ``GREENML_CPU_TDP_W`` or the TDP
table) and otherwise the highest mean power measured among the configurations.
The source is always returned with the figure.

Lazy imports: the CPU model sensor (and psutil, ~30 ms) is imported only when a CPU's
power is needed.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

from greenml.errors import ConfigError, GreenmlError
from greenml.hardware import gpu_spec
from greenml.measure.sensors.nvml import NvmlSensor
from greenml.optimize.sweep.knobs import import_torch
from greenml.optimize.sweep.result import ConfigResult

log = logging.getLogger("greenml")


@dataclass(frozen=True)
class MaxPower:
    """P_max in watts, and how it was obtained."""

    watts: float
    source: str


def resolve_max_power(
    device: str,
    results: Sequence[ConfigResult],
    given_w: float | None = None,
    gpu_index: int = 0,
) -> MaxPower:
    """P_max for the cost of a sweep on ``device``.

    Args:
        device: ``cpu`` or ``cuda``.
        results: The sweep's configurations (for the measured fallback).
        given_w: An explicit P_max, used as is.
        gpu_index: The CUDA device of the sweep.

    Raises:
        ConfigError: ``given_w`` is not a positive number.
    """
    if given_w is not None:
        if not (given_w > 0 and math.isfinite(given_w)):
            raise ConfigError(f"the maximum power must be a positive wattage, not {given_w}")
        return MaxPower(given_w, "given")
    found = _gpu_max_power(gpu_index) if device == "cuda" else _cpu_tdp()
    if found is not None:
        return found
    return _measured(device, results)


def _gpu_max_power(index: int) -> MaxPower | None:
    try:
        sensor = NvmlSensor(indices=[index])
    except (GreenmlError, ImportError) as exc:
        log.debug("NVML power limits unavailable: %s", exc)
        return _gpu_table_tdp(index)
    key = f"gpu{index}"
    try:
        name = sensor.devices[0].name
        _, high_w = sensor.power_limit_constraints_w(key)
        return MaxPower(high_w, f"NVML: largest settable power limit of {key} ({name})")
    except Exception as exc:  # a driver without limit queries: the table is next
        log.debug("NVML power limit constraints unreadable: %s", exc)
        return _gpu_table_tdp(index)
    finally:
        sensor.close()


def _gpu_table_tdp(index: int) -> MaxPower | None:
    name = import_torch().cuda.get_device_name(index)
    try:
        spec = gpu_spec(name)
    except ConfigError:
        return None
    if spec.tdp_w is None:
        return None
    return MaxPower(spec.tdp_w, f"TDP of {spec.name} in greenml's GPU table ({name!r} via torch)")


def _cpu_tdp() -> MaxPower | None:
    from greenml.measure.sensors.cpu_model import resolve_cpu_tdp

    tdp = resolve_cpu_tdp()
    if tdp.source == "default":  # a per-core guess: a measurement says more
        return None
    return MaxPower(tdp.tdp_w, f"CPU package TDP: {tdp.note}")


def _measured(device: str, results: Sequence[ConfigResult]) -> MaxPower:
    powers = [r.power_w for r in results if r.ok and math.isfinite(r.power_w) and r.power_w > 0]
    if powers:
        return MaxPower(
            max(powers),
            f"measured: highest mean power among the configurations (no {device.upper()} "
            "TDP or power limit known)",
        )
    if device == "cpu":
        from greenml.measure.sensors.cpu_model import resolve_cpu_tdp

        tdp = resolve_cpu_tdp()
        return MaxPower(tdp.tdp_w, f"CPU package TDP, nothing measured: {tdp.note}")
    return MaxPower(math.nan, "unknown: no power limit, no TDP and nothing measured")

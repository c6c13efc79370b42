"""The energy of an estimate beside its devices: host CPU and memory, idle cluster power.

Published footprints add terms the devices alone do not give:

- **host CPU and memory** (Green Algorithms, Lannelongue, Grealey & Inouye,
  "Green Algorithms: Quantifying the Carbon Footprint of Computation", Advanced
  Science 8(12), 2021): cores × power per core × core usage + memory GB ×
  0.3725 W/GB, over the wall-clock time;
- **idle cluster power** (Luccioni, Viguier & Ligozat, "Estimating the Carbon
  Footprint of BLOOM", arXiv:2211.02001, 2022: 256,646 kWh of idle consumption
  beside 433,196 kWh of dynamic GPU energy): a total in kWh, or a power drawn
  over the job's wall-clock time.

Each part is an :class:`EnergyPart` with its own relative uncertainty, so the
estimate's spread is the parts' combined in quadrature, weighted by energy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from greenml.errors import ConfigError
from greenml.estimation.inputs import energy_text, num
from greenml.quantities import J_PER_KWH

if TYPE_CHECKING:
    from greenml.estimation.inputs import Steps

MEMORY_W_PER_GB = 0.3725
"""Green Algorithms' memory power: 0.3725 W per GB of memory allocated (Lannelongue et
al. 2021, after the Crucial and Micron DRAM power calculators)."""

HOST_MODEL_REL = 0.30
"""A host drawn as cores × TDP per core × usage is the same kind of model as greenml's
CPU power model (±30 %)."""

IDLE_POWER_REL = 0.10
"""An idle power the user measured, held over the whole job (±10 %, as a given device
power: the hours it came from are not these hours)."""


@dataclass(frozen=True)
class EnergyPart:
    """One term of an estimate's IT energy: what it is, joules, and its relative spread."""

    name: str
    energy_j: float
    rel: float
    basis: str


@dataclass(frozen=True)
class HostPower:
    """The host's CPU and memory beside the devices (Green Algorithms' terms).

    Attributes:
        cpu_cores: CPU cores the job holds (all nodes together).
        cpu_core_w: Power per core at full use, W (CPU TDP ÷ cores).
        cpu_usage: Share of those cores busy on average, in (0, 1]; default 1.0.
        memory_gb: Memory the job holds, GB (all nodes together).
        memory_w_per_gb: W per GB; default :data:`MEMORY_W_PER_GB`.
    """

    cpu_cores: float | None = None
    cpu_core_w: float | None = None
    cpu_usage: float | None = None
    memory_gb: float | None = None
    memory_w_per_gb: float | None = None

    @property
    def given(self) -> bool:
        return any(v is not None for v in (self.cpu_cores, self.cpu_core_w, self.cpu_usage,
                                           self.memory_gb, self.memory_w_per_gb))  # fmt: skip

    def watts(self, steps: Steps) -> float:
        """Host watts, each input recorded in ``steps``.

        Raises:
            ConfigError: A core count without a power per core (or the reverse), or
                a value out of range.
        """
        cpu_w = 0.0
        if self.cpu_cores is not None or self.cpu_core_w is not None or self.cpu_usage is not None:
            if self.cpu_cores is None or self.cpu_core_w is None:
                raise ConfigError(
                    "host CPU power needs both cpu_cores and cpu_core_w (W per core: the "
                    "CPU's TDP ÷ its cores; Green Algorithms lists them per model)"
                )
            cores = _positive(self.cpu_cores, "cpu_cores")
            per_core = _positive(self.cpu_core_w, "cpu_core_w")
            usage = 1.0 if self.cpu_usage is None else _share(self.cpu_usage, "cpu_usage")
            steps.add("cpu_cores", cores, "given: CPU cores held by the job")
            steps.add("cpu_core_w", per_core, "given: W per core (TDP ÷ cores)")
            steps.add("cpu_usage", usage, "given" if self.cpu_usage is not None
                      else "default: 1.0 = every core busy throughout")  # fmt: skip
            cpu_w = cores * per_core * usage
        mem_w = 0.0
        if self.memory_gb is not None or self.memory_w_per_gb is not None:
            if self.memory_gb is None:
                raise ConfigError("memory_w_per_gb needs memory_gb (the memory the job holds)")
            gb = _positive(self.memory_gb, "memory_gb")
            per_gb = MEMORY_W_PER_GB if self.memory_w_per_gb is None else _positive(
                self.memory_w_per_gb, "memory_w_per_gb")  # fmt: skip
            steps.add("memory_gb", gb, "given: memory held by the job")
            said = ("given" if self.memory_w_per_gb is not None
                    else "default: 0.3725 W/GB (Green Algorithms, Lannelongue et al. 2021)")
            steps.add("memory_w_per_gb", per_gb, said)
            mem_w = gb * per_gb
        watts = cpu_w + mem_w
        steps.add("host_power_w", watts, "cores × W/core × usage + memory GB × W/GB "
                  "(Green Algorithms, Lannelongue et al. 2021)")  # fmt: skip
        return watts


def host_part(host: HostPower | None, wall_s: float | None, steps: Steps) -> EnergyPart | None:
    """The host's CPU and memory energy over the wall-clock time, or None if not given."""
    if host is None or not host.given:
        return None
    if wall_s is None:
        raise ConfigError("host CPU/memory power needs the job's time: give hours")
    watts = host.watts(steps)
    joules = watts * wall_s
    hours = num(wall_s / 3600)
    steps.line(f"host energy = {num(watts)} W × {hours} h = {energy_text(joules)}")
    basis = f"host CPU+memory (Green Algorithms terms) ±{HOST_MODEL_REL:.0%}"
    return EnergyPart("host", joules, HOST_MODEL_REL, basis)


def idle_part(
    idle_kwh: float | None, idle_w: float | None, wall_s: float | None, steps: Steps
) -> EnergyPart | None:
    """Idle cluster energy: a total in kWh, or watts over the wall-clock time."""
    if idle_kwh is None and idle_w is None:
        return None
    if idle_kwh is not None and idle_w is not None:
        raise ConfigError("give idle_kwh or idle_w, not both")
    if idle_kwh is not None:
        kwh = _non_negative(idle_kwh, "idle_kwh")
        steps.add("idle_kwh", kwh, "given: idle cluster energy over the job (as BLOOM's "
                  "256,646 kWh, Luccioni et al. 2022)")  # fmt: skip
        steps.line(f"idle energy = {num(kwh)} kWh (given)")
        return EnergyPart("idle", kwh * J_PER_KWH, 0.0, "idle energy given: taken as exact")
    watts = _non_negative(idle_w, "idle_w")
    if wall_s is None:
        raise ConfigError("idle_w needs the job's time: give hours, or idle_kwh instead")
    steps.add("idle_w", watts, "given: idle cluster power while the job runs")
    joules = watts * wall_s
    steps.line(f"idle energy = {num(watts)} W × {num(wall_s / 3600)} h = {energy_text(joules)}")
    return EnergyPart("idle", joules, IDLE_POWER_REL, f"idle power given ±{IDLE_POWER_REL:.0%}")


def measured_part(energy_kwh: float, steps: Steps) -> EnergyPart:
    """A measured energy total (a metered figure, or a paper's): the devices' part, exact."""
    kwh = _positive(energy_kwh, "energy_kwh")
    steps.add("energy_kwh", kwh, "given: measured IT energy of the job (one trial)")
    steps.line(f"measured energy = {num(kwh)} kWh (given)")
    return EnergyPart("measured", kwh * J_PER_KWH, 0.0,
                      "energy given (measured): its own uncertainty is its source's, taken "
                      "as exact here")  # fmt: skip


def combined_rel(parts: list[EnergyPart]) -> float:
    """The parts' spreads in quadrature, weighted by their energy."""
    total = sum(p.energy_j for p in parts)
    if total <= 0:
        return 0.0
    return math.sqrt(sum((p.energy_j * p.rel) ** 2 for p in parts)) / total


def _positive(value: float | None, name: str) -> float:
    if value is None or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name} must be a positive number, got {value}")
    return float(value)


def _non_negative(value: float | None, name: str) -> float:
    if value is None or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        raise ConfigError(f"{name} must be a number ≥ 0, got {value}")
    return float(value)


def _share(value: float, name: str) -> float:
    if isinstance(value, bool) or not (math.isfinite(value) and 0.0 < value <= 1.0):
        raise ConfigError(f"{name} must be in (0, 1], got {value}")
    return float(value)

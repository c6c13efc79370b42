"""The figures every export needs, summed over a set of runs, with their provenance.

A run without a known carbon figure is refused rather than counted as zero: a
standard document that says "0 g" for an unknown is worse than none.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from greenml.errors import ConfigError
from greenml.quantities import J_PER_KWH
from greenml.record.run_record import RunRecord


@dataclass(frozen=True)
class Footprint:
    """Energy and emissions of some runs, with how they were obtained."""

    run_ids: tuple[str, ...]
    energy_j: float
    energy_uncertainty_rel: float
    co2_g: float
    co2_uncertainty_rel: float
    duration_s: float
    methods: tuple[str, ...]  # energy methods of the components, e.g. ("counter", "estimated")
    intensity_sources: tuple[str, ...]
    locations: tuple[str, ...]
    hardware: tuple[str, ...]  # "4 x NVIDIA H100 80GB HBM3", "AMD EPYC 7763"
    started_at: str
    imported_from: tuple[str, ...]  # tools whose figures these are (greenml import)

    @property
    def energy_kwh(self) -> float:
        return self.energy_j / J_PER_KWH

    @property
    def intensity_g_per_kwh(self) -> float | None:
        return self.co2_g / self.energy_kwh if self.energy_j > 0 else None

    @property
    def source(self) -> str:
        """One line: who measured, how, and where the intensity came from."""
        who = " + ".join(self.imported_from) if self.imported_from else "greenml"
        how = "/".join(self.methods) or "unknown method"
        grid = "; ".join(self.intensity_sources) or "intensity source not recorded"
        return (f"{who} ({how} energy, ±{self.energy_uncertainty_rel:.0%}; "
                f"carbon intensity: {grid})")  # fmt: skip


def footprint(records: Sequence[RunRecord]) -> Footprint:
    """Sum the records' energy and carbon (uncertainties added as independent errors).

    Raises:
        ConfigError: No runs, or a run without a known carbon figure.
    """
    if not records:
        raise ConfigError("name at least one run (--runs)")
    energy = co2 = duration = 0.0
    energy_var = co2_var = 0.0
    methods: list[str] = []
    sources: list[str] = []
    locations: list[str] = []
    hardware: list[str] = []
    tools: list[str] = []
    for r in records:
        kg = r.carbon.kg if r.carbon is not None else None
        if kg is None or not math.isfinite(kg):
            raise ConfigError(
                f"run {r.id} has no carbon figure (set its zone and account it first)")
        e = r.energy.total_j
        energy += e
        energy_var += (e * r.energy.uncertainty_rel) ** 2
        g = kg * 1000.0
        co2 += g
        co2_var += (g * ((r.carbon.uncertainty_rel if r.carbon else None) or 0.0)) ** 2
        duration += r.duration_s or 0.0
        methods += [c.method for c in r.energy.components.values()]
        if r.carbon is not None:
            sources.append(r.carbon.source or "")
            locations.append(r.carbon.location or "")
        hardware += _hardware(r)
        imported = r.imported
        if imported is not None:
            tools.append(f"{imported.tool} {imported.tool_version or ''}".strip())
    return Footprint(
        run_ids=tuple(r.id for r in records),
        energy_j=energy,
        energy_uncertainty_rel=math.sqrt(energy_var) / energy if energy > 0 else 0.0,
        co2_g=co2,
        co2_uncertainty_rel=math.sqrt(co2_var) / co2 if co2 > 0 else 0.0,
        duration_s=duration,
        methods=_unique(methods),
        intensity_sources=_unique(sources),
        locations=_unique(locations),
        hardware=_unique(hardware),
        started_at=min(r.started_at for r in records),
        imported_from=_unique(tools),
    )


def _hardware(r: RunRecord) -> list[str]:
    env = r.environment
    names: dict[str, int] = {}
    for gpu in (env.gpu.gpus if env.gpu and env.gpu.gpus else None) or []:
        if gpu.name:
            names[gpu.name] = names.get(gpu.name, 0) + 1
    out = [f"{n} x {name}" if n > 1 else name for name, n in names.items()]
    if env.cpu is not None and env.cpu.model:
        out.append(env.cpu.model)
    return out


def _unique(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in items if i))

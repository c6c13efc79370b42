"""Machine selection: rank GPUs and cloud instances for a workload by time, energy, CO2eq or cost.

The scaling assumption (printed with every answer):

- **time**: a candidate reaches the same model FLOPs utilization (MFU) as the
  measured run, so time = FLOPs ÷ (GPUs × peak FLOP/s at the precision × MFU).
  For a run measured on a GPU, MFU cancels: time = measured time × measured
  peak ÷ candidate peak. Several GPUs in one instance scale linearly (data
  parallel, communication not counted: a lower bound on time).
- **power**: each GPU draws the share of its TDP the measured GPU drew;
  without a measured GPU, its whole TDP (an upper bound on energy).
- **uncertainty**: ±``SCALING_UNCERTAINTY_REL`` on time and energy for a
  transfer between architectures (MFU differs between GPU generations and
  kernels), ±``DEFAULT_MFU_UNCERTAINTY_REL`` when the MFU itself is assumed.

Host CPUs, memory and networking are not counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from greenml.accounting.pue import Pue, pue_for
from greenml.advise.candidates import Candidate
from greenml.advise.grid import Grid, region_grid
from greenml.advise.workload import REFERENCE_MFU, Workload
from greenml.errors import ConfigError

OBJECTIVES = ("energy", "cost", "carbon", "time")
SCALING_UNCERTAINTY_REL = 0.30
"""Measured-run transfer across architectures: MFU of one model differs by about a
third between GPU generations (e.g. the MLPerf Training v3.1 closed results of one
benchmark across A100 and H100 systems); greenml's judgement, stated as such."""
DEFAULT_MFU_UNCERTAINTY_REL = 0.40
"""When MFU is assumed (PaLM's Table 3 range, 21-46 %, around 35 %): ±40 %."""


@dataclass(frozen=True)
class Option:
    """One candidate's figures, or why it cannot run the workload."""

    candidate: Candidate
    time_s: float | None = None
    power_w: float | None = None
    it_energy_j: float | None = None
    energy_j: float | None = None
    pue: Pue | None = None
    grid: Grid | None = None
    co2_g: float | None = None
    cost_usd: float | None = None
    cost_basis: str = ""
    excluded: str | None = None

    def value(self, objective: str) -> float | None:
        return {
            "energy": self.energy_j,
            "cost": self.cost_usd,
            "carbon": self.co2_g,
            "time": self.time_s,
        }[objective]

    def to_dict(self) -> dict[str, Any]:
        c = self.candidate
        return {
            "name": c.name,
            "kind": c.kind,
            "gpu": c.spec.name,
            "gpus": c.count,
            "time_s": self.time_s,
            "power_w_per_gpu": self.power_w,
            "it_energy_j": self.it_energy_j,
            "energy_j": self.energy_j,
            "energy_kwh": None if self.energy_j is None else self.energy_j / 3.6e6,
            "pue": None if self.pue is None else self.pue.value,
            "pue_source": None if self.pue is None else self.pue.source,
            "intensity_g_per_kwh": None if self.grid is None else self.grid.g_per_kwh,
            "intensity_source": None if self.grid is None else self.grid.source,
            "co2_g": self.co2_g,
            "cost_usd": self.cost_usd,
            "cost_basis": self.cost_basis,
            "excluded": self.excluded,
        }


@dataclass(frozen=True)
class HardwareAdvice:
    """The ranking, the excluded candidates and every assumption."""

    workload: Workload
    objective: str
    deadline_s: float | None
    ranked: tuple[Option, ...]
    excluded: tuple[Option, ...]
    uncertainty_rel: float
    assumptions: tuple[str, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def best(self) -> Option:
        return self.ranked[0]

    def decision(self) -> str:
        """One sentence: what to run on, and by how much it beats the runner-up."""
        best = self.best
        text = f"run on {best.candidate.name} (best {self.objective} of {len(self.ranked)} fitting)"
        if len(self.ranked) > 1:
            a, b = best.value(self.objective), self.ranked[1].value(self.objective)
            if a is not None and b is not None and b > 0:
                text += (
                    f"; {1 - a / b:.0%} less {self.objective} than "
                    f"{self.ranked[1].candidate.name}"
                )
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision": self.decision(),
            "objective": self.objective,
            "deadline_s": self.deadline_s,
            "workload": self.workload.to_dict(),
            "uncertainty_rel": self.uncertainty_rel,
            "assumptions": list(self.assumptions),
            "ranked": [o.to_dict() for o in self.ranked],
            "excluded": [o.to_dict() for o in self.excluded],
            "notes": list(self.notes),
        }


def advise_hardware(
    workload: Workload,
    candidates: list[Candidate],
    *,
    objective: str = "energy",
    deadline_s: float | None = None,
    grid: Grid | None = None,
    run_grid: Grid | None = None,
    pue: float | None = None,
    electricity_usd_per_kwh: float | None = None,
    mfu: float | None = None,
) -> HardwareAdvice:
    """Rank ``candidates`` for ``workload``.

    Args:
        workload: What to run.
        candidates: Where it could run.
        objective: ``energy``, ``cost``, ``carbon`` or ``time`` (lowest first).
        deadline_s: Longest acceptable time; slower candidates are excluded.
        grid: Intensity of a location the user gave (applies to every candidate).
        run_grid: The measured run's intensity, for GPU candidates without ``grid``.
        pue: PUE of the user's facility (GPU candidates); default ``datacenter``.
        electricity_usd_per_kwh: Electricity price for GPU candidates' cost.
        mfu: MFU to assume when the work is in FLOPs (default 0.35).

    Raises:
        ConfigError: Unknown objective, bad numbers, or no candidate fits.
    """
    if objective not in OBJECTIVES:
        raise ConfigError(f"objective must be one of {', '.join(OBJECTIVES)}, not {objective!r}")
    if deadline_s is not None and not (deadline_s > 0 and math.isfinite(deadline_s)):
        raise ConfigError(f"deadline must be a positive duration, not {deadline_s}")
    if mfu is not None and not (0 < mfu <= 1):
        raise ConfigError(f"--mfu must be in (0, 1], not {mfu}")
    if electricity_usd_per_kwh is not None and not electricity_usd_per_kwh >= 0:
        raise ConfigError(f"--price must be >= 0 USD/kWh, not {electricity_usd_per_kwh}")
    onprem_pue = pue_for(value=pue) if pue is not None else pue_for(provider="datacenter")
    scaled_from_gpu = workload.measured_gpu is not None and mfu is None and (
        workload.flops_source.startswith("measured")
    )
    used_mfu = REFERENCE_MFU if mfu is None else mfu
    share = workload.measured_power_share
    price = electricity_usd_per_kwh
    options = [
        _option(c, workload, used_mfu, share, onprem_pue, grid, run_grid, price, deadline_s)
        for c in candidates
    ]
    fitting = [o for o in options if o.excluded is None]
    excluded = tuple(o for o in options if o.excluded is not None)
    if not fitting:
        reasons = sorted({o.excluded or "" for o in excluded})
        raise ConfigError(
            f"the workload fits no candidate ({len(options)} tried): " + "; ".join(reasons[:3])
        )
    if objective == "carbon" and all(o.co2_g is None for o in fitting):
        raise ConfigError(
            "objective carbon needs an intensity: give --zone, --region, --country or --ci"
        )
    if objective == "cost" and all(o.cost_usd is None for o in fitting):
        raise ConfigError("objective cost needs prices: give --price or rank instances")
    ranked = sorted(fitting, key=lambda o: _sort_key(o, objective))
    rel = SCALING_UNCERTAINTY_REL if scaled_from_gpu else DEFAULT_MFU_UNCERTAINTY_REL
    return HardwareAdvice(
        workload=workload,
        objective=objective,
        deadline_s=deadline_s,
        ranked=tuple(ranked),
        excluded=excluded,
        uncertainty_rel=rel,
        assumptions=tuple(
            _assumptions(workload, scaled_from_gpu, used_mfu, mfu, share, onprem_pue, rel)
        ),
        notes=workload.notes + _small_job_note(ranked),
    )


def _small_job_note(ranked: list[Option]) -> tuple[str, ...]:
    if max(o.time_s or 0.0 for o in ranked) >= 60:
        return ()
    return (
        "every fitting candidate computes this job in under a minute: start-up and data "
        "loading (not scaled) dominate its real time; the ranking compares the compute only",
    )


def _sort_key(option: Option, objective: str) -> tuple[int, float, float]:
    value = option.value(objective)
    time = option.time_s or 0.0
    return (1, 0.0, time) if value is None else (0, value, time)


def _option(
    c: Candidate,
    w: Workload,
    mfu: float,
    share: float | None,
    onprem_pue: Pue,
    grid: Grid | None,
    run_grid: Grid | None,
    usd_per_kwh: float | None,
    deadline_s: float | None,
) -> Option:
    try:
        peak = c.spec.peak_tflops(w.precision) * 1e12
    except ConfigError:
        return Option(c, excluded=f"no {w.precision} peak in the GPU table")
    if w.memory_gb is not None and w.memory_gb > c.spec.memory_gb:
        return Option(
            c, excluded=f"needs {w.memory_gb:.3g} GB, has {c.spec.memory_gb:g} GB per GPU"
        )
    time_s = w.flops / (c.count * peak * mfu)
    if deadline_s is not None and time_s > deadline_s:
        return Option(c, time_s=time_s, excluded=f"misses the deadline: needs {_human_s(time_s)}")
    tdp = c.spec.tdp_w or 0.0
    power = tdp * (share if share is not None else 1.0)
    it_j = power * c.count * time_s
    if c.kind == "instance" and c.price is not None:
        pue = pue_for(provider=c.price.provider)
        where = grid or region_grid(c.price.provider, c.price.region)
        cost: float | None = c.price.cost_usd(time_s)
        basis = f"{c.price.pricing} {c.price.usd_per_h:g} USD/h ({c.price.source}, {c.price.date})"
    else:
        pue = onprem_pue
        where = grid or run_grid or Grid(None, "unknown: give --zone, --region, --country or --ci")
        energy = it_j * pue.value
        cost = None if usd_per_kwh is None else energy / 3.6e6 * usd_per_kwh
        basis = (
            f"electricity only at {usd_per_kwh:g} USD/kWh (hardware: see greenml advise tco)"
            if usd_per_kwh is not None
            else "unknown: no --price (USD/kWh) given"
        )
    energy_j = it_j * pue.value
    return Option(c, time_s, power, it_j, energy_j, pue, where, where.co2_g(energy_j), cost, basis)


def _assumptions(
    w: Workload,
    scaled_from_gpu: bool,
    used_mfu: float,
    mfu: float | None,
    share: float | None,
    onprem_pue: Pue,
    rel: float,
) -> list[str]:
    memory = f"{w.memory_gb:.3g} GB — " if w.memory_gb is not None else ""
    out = [
        f"work: {w.flops:.4g} FLOP — {w.flops_source}",
        f"precision: {w.precision} — {w.precision_source}",
        f"memory needed: {memory}{w.memory_source}",
    ]
    if scaled_from_gpu and w.measured_gpu is not None:
        out.append(
            f"time: candidates reach the MFU the run reached on {w.measured_on}: time = "
            f"{w.measured_duration_s:.4g} s × its peak ÷ candidate peak (GPUs × dense "
            "peak at the precision, gpus.csv)"
        )
    else:
        how = "given (--mfu)" if mfu is not None else (
            "default 0.35 (Chowdhery et al. 2022, PaLM Table 3: 21-46 % on large models)"
        )
        out.append(
            f"time = FLOPs ÷ (GPUs × dense peak at the precision × MFU {used_mfu:g}); MFU {how}"
        )
    if share is not None:
        out.append(f"power: each GPU draws {share:.0%} of its TDP, as the measured GPU did")
    else:
        out.append("power: each GPU draws its full TDP (no GPU measured: an upper bound)")
    out.append("several GPUs in an instance scale linearly (communication not counted)")
    out.append(
        f"PUE: instances their provider's (Cloud Carbon Footprint); GPUs {onprem_pue.value:g} "
        f"({onprem_pue.source})"
    )
    out.append("host CPU, memory and network energy not counted; start-up time not scaled")
    why = "scaling across architectures" if scaled_from_gpu else "the MFU is assumed"
    out.append(f"uncertainty of time and energy: ±{rel:.0%} ({why})")
    return out


def _human_s(seconds: float) -> str:
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"

"""Offline estimate of the energy, carbon and cost of a job that was not measured.

Four ways to give the amount of work (exactly one per estimate):

- **device-hours**: ``gpu``, ``count``, ``hours`` (wall-clock hours per device);
- **compute**: ``flops`` on ``gpu`` at ``mfu`` of its ``precision`` peak:
  device-hours = FLOPs / (peak × MFU) / 3600;
- **model & data**: ``params`` × ``tokens`` → training FLOPs ≈ 6·N·D (Kaplan
  et al., "Scaling Laws for Neural Language Models", 2020), then as compute;
- **energy**: ``energy_kwh``, a measured total (a meter's, or a paper's such as
  Dodge et al. 2022), then carbon, water and cost from it; ``gpu``, ``count``
  and ``hours`` are optional there (embodied carbon, host and idle terms).

Beside the devices an estimate may add the host's CPU and memory (``host``,
Green Algorithms' terms) and idle cluster energy (``idle_kwh`` or ``idle_w``,
as BLOOM's), see :mod:`greenml.estimation.parts`.

Power per device is TDP × ``utilization`` unless ``power_w`` (a measured
average per device) is given. IT energy × PUE = facility energy; × carbon
intensity = CO2eq; × ``price`` = cost. ``trials`` repeats the whole job (a
hyperparameter search). Every input and default lands in
:attr:`Estimate.assumptions` with its source; nothing is filled in silently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from greenml.accounting.equivalences import equivalences
from greenml.errors import ConfigError
from greenml.estimation.inputs import (
    Steps,
    energy_text,
    mass_text,
    num,
    resolve_device,
    resolve_intensity,
    resolve_pue,
)
from greenml.estimation.parts import (
    EnergyPart,
    HostPower,
    host_part,
    idle_part,
    measured_part,
)
from greenml.estimation.uncertainty import Spread, spread_of
from greenml.quantities import J_PER_KWH

if TYPE_CHECKING:
    from greenml.accounting.equivalences import Equivalence
    from greenml.accounting.footprint import Footprint
    from greenml.accounting.intensity import IntensitySource
    from greenml.accounting.pue import Pue
    from greenml.hardware.gpu import GpuSpec


@dataclass(frozen=True)
class Estimate:
    """An estimated job: energy in joules, CO2eq in grams, cost in US dollars.

    Attributes:
        mode: ``device-hours``, ``compute``, ``model-data`` or ``energy``.
        gpu: The table row used; None for a measured energy without a device.
        device_hours: Device-hours over all trials (0 if unknown).
        wall_hours: Wall-clock hours of one trial (0 if unknown).
        power_w: Average power per device; None for a measured energy.
        it_energy_j: IT energy: the devices (or the measured total), the host
            and idle cluster energy.
        energy_j: Facility energy (IT × PUE): what the grid supplies.
        pue: The PUE used (value and source).
        intensity_g_per_kwh: Carbon intensity, ``None`` if unknown.
        intensity_source: Where the intensity comes from, or why it is unknown.
        co2_g: Emissions, ``None`` if the intensity is unknown.
        cost_usd: Electricity cost, ``None`` if no price was given.
        assumptions: Every input and default: name → ``{"value", "source"}``.
        formula: The calculation with the numbers substituted, one step a line.
        equivalences: Everyday equivalences of the CO2eq and the energy.
        notes: What the reader should know (e.g. carbon unknown and how to fix it).
        spread: How far the figures may be off (see :mod:`greenml.estimation.uncertainty`).
        footprint: The ``carbon_market``, ``water`` and ``embodied`` blocks
            (:mod:`greenml.accounting.footprint`), as a run record holds them.
        parts: The IT energy's terms (devices or measured, host, idle), each with
            its spread.
    """

    mode: str
    gpu: GpuSpec | None
    device_hours: float
    wall_hours: float
    power_w: float | None
    it_energy_j: float
    energy_j: float
    pue: Pue
    intensity_g_per_kwh: float | None
    intensity_source: str
    co2_g: float | None
    cost_usd: float | None
    assumptions: dict[str, dict[str, Any]]
    formula: str
    equivalences: tuple[Equivalence, ...]
    notes: tuple[str, ...] = ()
    spread: Spread | None = None
    footprint: dict[str, Any] | None = None
    parts: tuple[EnergyPart, ...] = ()

    def _footprint_figure(self, key: str, field: str, scale: float) -> float | None:
        block = (self.footprint or {}).get(key) or {}
        value = block.get(field)
        return None if value is None else float(value) * scale

    @property
    def energy_kwh(self) -> float:
        return self.energy_j / J_PER_KWH

    @property
    def energy_mwh(self) -> float:
        return self.energy_kwh / 1000

    @property
    def it_energy_mwh(self) -> float:
        return self.it_energy_j / J_PER_KWH / 1000

    @property
    def co2_t(self) -> float | None:
        return None if self.co2_g is None else self.co2_g / 1e6

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: figures in MWh, tonnes and dollars, with every assumption."""
        return {
            "energy_mwh": self.energy_mwh,
            "energy_kwh": self.energy_kwh,
            "it_energy_mwh": self.it_energy_mwh,
            "facility_energy_mwh": self.energy_mwh,
            "co2_t": self.co2_t,
            "co2_market_t": self._footprint_figure("carbon_market", "kg", 1e-3),
            "water_l": self._footprint_figure("water", "litres", 1.0),
            "embodied_co2_t": self._footprint_figure("embodied", "kg", 1e-3),
            "cost_usd": self.cost_usd,
            "device_hours": self.device_hours,
            "wall_hours": self.wall_hours,
            "mode": self.mode,
            "gpu": None if self.gpu is None else self.gpu.name,
            "parts_kwh": {p.name: p.energy_j / J_PER_KWH for p in self.parts},
            "power_w": self.power_w,
            "pue": self.pue.value,
            "intensity_g_per_kwh": self.intensity_g_per_kwh,
            "intensity_source": self.intensity_source,
            "assumptions": self.assumptions,
            "equivalences": {e.key: e.to_json() for e in self.equivalences},
            "formula": self.formula,
            "notes": list(self.notes),
            "method": "estimated",
            **(self.spread.to_json() if self.spread is not None else {}),
            **(self.footprint or {}),
        }


def estimate(
    *,
    gpu: str | GpuSpec | None = None,
    count: int = 1,
    hours: float | None = None,
    flops: float | None = None,
    params: float | None = None,
    tokens: float | None = None,
    utilization: float | None = None,
    power_w: float | None = None,
    mfu: float | None = None,
    precision: str | None = None,
    pue: float | str | None = None,
    ci: float | IntensitySource | None = None,
    ci_description: str | None = None,
    price: float | None = None,
    trials: int = 1,
    at: datetime | None = None,
    footprint: Footprint | None = None,
    energy_kwh: float | None = None,
    host: HostPower | None = None,
    idle_kwh: float | None = None,
    idle_w: float | None = None,
) -> Estimate:
    """Estimate a job that was not measured.

    Args:
        gpu: Device name or alias (``H100``, ``NVIDIA A100-SXM4-40GB``) or a spec.
        count: Devices working in parallel.
        hours: Wall-clock hours per device (device-hours mode).
        flops: Total floating-point operations (compute mode).
        params: Model parameters N (model & data mode, with ``tokens``).
        tokens: Training tokens D (model & data mode, with ``params``).
        utilization: Share of TDP drawn on average, in (0, 1]; default 1.0.
        power_w: Average power per device in watts, e.g. measured; replaces
            TDP × utilization.
        mfu: Model FLOPs utilization in (0, 1]; default 1.0 (peak throughput).
        precision: ``fp16`` (default), ``bf16``, ``tf32``, ``fp32``, ``int8`` or
            ``fp16_sparse`` — which peak of the table the FLOPs run at.
        pue: A PUE value, or a provider (``gcp``, ``aws``, ``azure``,
            ``datacenter``, ``personal``); default 1.0 (IT energy only).
        ci: Carbon intensity in gCO2eq/kWh, or an intensity source; its value
            at ``at`` is held constant over the job.
        ci_description: How ``ci`` was chosen (e.g. the resolved location).
        price: Electricity price in US dollars per kWh of facility energy.
        trials: Times the whole job runs (a hyperparameter search).
        at: When the job ran, for an intensity source (default: now).
        footprint: Market-based declarations, WUE and place (default: nothing
            declared, the stated WUE default, no place).
        energy_kwh: A measured IT energy of one trial (energy mode); replaces
            power × time. ``hours`` then only gives the time (host, idle, embodied).
        host: Host CPU and memory beside the devices (Green Algorithms' terms).
        idle_kwh: Idle cluster energy over the whole job (BLOOM's term), or
        idle_w: idle cluster power held over the job's wall-clock time.

    Raises:
        ConfigError: Bad or conflicting input, unknown GPU (with the closest
            names), or a device without the figure needed.
    """
    steps = Steps()
    mode = _mode(hours, flops, params, tokens, energy_kwh)
    if gpu is None and mode != "energy":
        raise ConfigError("gpu is needed to estimate from hours, flops or params × tokens")
    spec = None if gpu is None else resolve_device(gpu, steps)
    count = _positive_int(count, "count")
    trials = _positive_int(trials, "trials")
    steps.add("count", count, "given: devices in parallel" if count != 1 else "default: 1 device")
    if mode == "energy":
        wall_h, one_trial_dh = _energy_mode_time(spec, count, hours, mfu, precision, power_w,
                                                 utilization, steps)  # fmt: skip
    elif mode == "device-hours":
        if mfu is not None or precision is not None:
            raise ConfigError("mfu and precision apply to flops or params × tokens, not to hours")
        wall_h = _positive(hours, "hours")
        one_trial_dh = count * wall_h
        steps.add("hours", wall_h, "given: wall-clock hours per device")
        steps.line(f"device-hours = {count:,} × {num(wall_h)} h = {num(one_trial_dh)} h")
    else:
        assert spec is not None
        work = _flops(mode, flops, params, tokens, steps)
        one_trial_dh = steps.compute_hours(spec, work, precision, mfu)
        wall_h = one_trial_dh / count
        steps.add("hours", wall_h, "derived: device-hours ÷ count (wall-clock per device)")
    device_hours = one_trial_dh * trials
    steps.add("trials", trials, "given" if trials != 1 else "default: the job runs once")
    if trials != 1 and device_hours:
        steps.line(f"× {trials} trials = {num(device_hours)} device-hours")
    wall_s = None if wall_h is None else wall_h * 3600.0 * trials
    watts: float | None = None
    others: list[EnergyPart] = []
    if mode == "energy":
        assert energy_kwh is not None
        one = measured_part(energy_kwh, steps)
        others.append(EnergyPart(one.name, one.energy_j * trials, one.rel, one.basis))
        device_j = 0.0
    else:
        assert spec is not None
        watts = steps.power(spec, power_w, utilization)
        device_j = device_hours * 3600.0 * watts
        _check_finite(device_j, device_hours, watts)
        steps.line(f"device energy = {num(device_hours)} h × {num(watts)} W = "
                   f"{energy_text(device_j)}")  # fmt: skip
    beside = (host_part(host, wall_s, steps), idle_part(idle_kwh, idle_w, wall_s, steps))
    others += [p for p in beside if p is not None]
    parts = ([EnergyPart("devices", device_j, 0.0, "")] if mode != "energy" else []) + others
    it_j = sum(p.energy_j for p in parts)
    _check_finite(it_j, device_hours, watts or 0.0)
    if len(parts) == 1 and mode != "energy":  # the devices alone: their line is the IT energy
        steps.lines[:] = [ln.replace("device energy = ", "IT energy = ") for ln in steps.lines]
    if len(parts) > 1:
        terms = " + ".join(f"{p.name} {energy_text(p.energy_j)}" for p in parts)
        steps.line(f"IT energy = {terms} = {energy_text(it_j)}")
    pue_used = resolve_pue(pue, steps)
    energy_j = pue_used.facility_j(it_j)
    steps.line(
        f"facility energy = {energy_text(it_j)} × PUE {pue_used.value:g} = {energy_text(energy_j)}"
    )
    intensity, source = resolve_intensity(ci, ci_description, at or datetime.now(timezone.utc))
    co2_g = _co2(energy_j, intensity, source, steps)
    cost = _cost(energy_j, price, steps)
    spread = spread_of(
        power_given=power_w is not None, mode=mode, mfu_given=mfu is not None,
        intensity_rel=_intensity_rel(intensity, source, (wall_h or 0.0) * 3600.0),
        device_j=device_j, others=others,
    )  # fmt: skip
    when = at or datetime.now(timezone.utc)
    devices = [(spec.name, device_hours)] if spec is not None and device_hours > 0 else []
    blocks = _footprint(footprint, devices, (wall_h or 0.0) * trials, it_j, energy_j, co2_g,
                        intensity, source, spread.co2_rel, when.year)  # fmt: skip
    return Estimate(
        mode=mode,
        gpu=spec,
        device_hours=device_hours,
        wall_hours=wall_h or 0.0,
        power_w=watts,
        it_energy_j=it_j,
        energy_j=energy_j,
        pue=pue_used,
        intensity_g_per_kwh=intensity,
        intensity_source=source,
        co2_g=co2_g,
        cost_usd=cost,
        assumptions=steps.assumptions,
        formula="\n".join(steps.lines),
        equivalences=tuple(equivalences(co2_g, energy_j)),
        notes=() if co2_g is not None else (_unknown_note(source),),
        spread=spread,
        footprint=blocks,
        parts=tuple(parts),
    )


def _energy_mode_time(
    spec: GpuSpec | None, count: int, hours: float | None, mfu: float | None,
    precision: str | None, power_w: float | None, utilization: float | None, steps: Steps,
) -> tuple[float | None, float]:  # fmt: skip
    """Wall-clock hours (None if not given) and device-hours of one trial, energy mode."""
    for name, value in (("mfu", mfu), ("precision", precision), ("power_w", power_w),
                        ("utilization", utilization)):  # fmt: skip
        if value is not None:
            raise ConfigError(f"{name} does not apply to a measured energy (energy_kwh)")
    if hours is None:
        steps.add("hours", None, "not given: no time (embodied carbon needs it)")
        return None, 0.0
    wall_h = _positive(hours, "hours")
    steps.add("hours", wall_h, "given: wall-clock hours (time only; the energy is measured)")
    return wall_h, (count * wall_h if spec is not None else 0.0)


def _check_finite(joules: float, device_hours: float, watts: float) -> None:
    if not math.isfinite(joules * 10.0):  # PUE, CO2eq and cost multiply it further
        raise ConfigError(
            f"the estimate overflows: {num(device_hours)} device-hours × {num(watts)} W is beyond "
            "any real job; check --hours, --flops or --params/--tokens"
        )


def _footprint(
    footprint: Footprint | None, devices: list[tuple[str, float]], machine_hours: float,
    it_j: float, energy_j: float, co2_g: float | None, intensity: float | None, source: str,
    co2_rel: float | None, year: int,
) -> dict[str, Any]:  # fmt: skip
    """The market-based, water and embodied blocks of an estimate."""
    from greenml.accounting.footprint import Footprint
    from greenml.accounting.water import DEFAULT_WUE

    chosen = footprint or Footprint(None, DEFAULT_WUE)
    carbon: dict[str, Any] = {"status": "ok" if co2_g is not None else "unknown",
                              "kg": None if co2_g is None else co2_g / 1000,
                              "facility_energy_kwh": energy_j / J_PER_KWH,
                              "intensity_g_per_kwh": intensity, "source": source,
                              "uncertainty_rel": co2_rel}  # fmt: skip
    return chosen.blocks(it_kwh=it_j / J_PER_KWH, carbon=carbon, devices=devices,
                         machine_hours=machine_hours, year=year, strict=True)  # fmt: skip


def _mode(
    hours: float | None, flops: float | None, params: float | None, tokens: float | None,
    energy_kwh: float | None = None,
) -> str:
    if energy_kwh is not None:
        if flops is not None or params is not None or tokens is not None:
            raise ConfigError(
                "energy_kwh is a measured total: it replaces flops and params × tokens "
                "(give hours only for the time)"
            )
        return "energy"
    given = [
        name
        for name, on in (
            ("hours", hours is not None),
            ("flops", flops is not None),
            ("params × tokens", params is not None or tokens is not None),
        )
        if on
    ]
    if len(given) != 1:
        what = " and ".join(given) if given else "none"
        raise ConfigError(
            f"give exactly one of hours (device-hours), flops (compute), params and "
            f"tokens (model & data) or energy_kwh (measured); got {what}"
        )
    return {"hours": "device-hours", "flops": "compute"}.get(given[0], "model-data")


def _flops(
    mode: str, flops: float | None, params: float | None, tokens: float | None, steps: Steps
) -> float:
    if mode == "compute":
        work = _positive(flops, "flops")
        steps.add("flops", work, "given")
        return work
    if params is None or tokens is None:
        raise ConfigError("the model & data mode needs both params and tokens")
    n, d = _positive(params, "params"), _positive(tokens, "tokens")
    work = 6.0 * n * d
    steps.add("params", n, "given")
    steps.add("tokens", d, "given")
    steps.add("flops", work, "derived: 6 × params × tokens (Kaplan et al. 2020, training)")
    steps.line(f"training FLOPs = 6 × {n:.3g} params × {d:.3g} tokens = {work:.3g} FLOP")
    return work


def _unknown_note(source: str) -> str:
    return source if source.startswith("carbon unknown") else f"carbon unknown: {source}"


def _co2(energy_j: float, intensity: float | None, source: str, steps: Steps) -> float | None:
    steps.add("carbon_intensity_g_per_kwh", intensity, source)
    kwh = energy_j / J_PER_KWH
    if intensity is None:
        steps.line("CO2eq = unknown (no carbon intensity)")
        return None
    co2_g = kwh * intensity
    steps.line(f"CO2eq = {num(kwh)} kWh × {num(intensity)} g/kWh = {mass_text(co2_g)}")
    return co2_g


def _cost(energy_j: float, price: float | None, steps: Steps) -> float | None:
    if price is None:
        steps.add("price_usd_per_kwh", None, "not given: no cost")
        return None
    if isinstance(price, bool) or not (math.isfinite(price) and price >= 0):
        raise ConfigError(f"price must be ≥ 0 USD/kWh, got {price}")
    kwh = energy_j / J_PER_KWH
    cost = kwh * price
    steps.add("price_usd_per_kwh", float(price), "given; applied to facility energy")
    steps.line(f"cost = {num(kwh)} kWh × ${price:g}/kWh = ${num(cost)}")
    return cost


def _intensity_rel(intensity: float | None, source: str, duration_s: float) -> float | None:
    """The intensity's spread: none for a user's figure, else that of one value held over
    the whole job (as a yearly mean is for a run this long)."""
    from greenml.accounting.carbon import intensity_uncertainty

    if intensity is None:
        return None
    if source.startswith("given by the user"):
        return 0.0
    return intensity_uncertainty("yearly", duration_s)


def _positive(value: float | None, name: str) -> float:
    if value is None or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name} must be a positive number, got {value}")
    return float(value)


def _positive_int(value: int, name: str) -> int:
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ConfigError(f"{name} must be a whole number ≥ 1, got {value}")
    return int(value)

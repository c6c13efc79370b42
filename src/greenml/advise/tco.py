"""Buy or rent: total cost of ownership and carbon over N years, and the break-even usage.

Buying (on-premises) costs the hardware less its residual value, staff, space
and maintenance per year, and electricity: the GPUs draw their busy power for
the share ``usage`` of the hours and their idle power the rest, times the PUE
(cooling is inside the PUE). Renting costs the hours used: on-demand at the
list price; a reservation every hour of the term whatever the usage; spot at
the spot price for the hours the interruption model of ``greenml plan spot``
says the work really takes (checkpoints, lost work and restarts included).

Carbon: the electricity of each option × its grid's intensity, plus embodied
emissions: all of the purchased GPUs' (over the horizon's share of their
lifetime) for buying, the used hours' share of a GPU's lifetime for renting.

Every cost is linear in the usage ``u``, so the break-even usage against an
hourly option solves ``A + B·u = R·u``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from greenml.accounting.pue import Pue, pue_for
from greenml.advise.candidates import INSTANCE_GPUS
from greenml.advise.grid import Grid, grid_for, region_grid
from greenml.advise.tco_inputs import (
    DEFAULT_YEARS,
    ELECTRICITY_SOURCE,
    ELECTRICITY_USD_PER_KWH,
    Given,
    server_price,
)
from greenml.errors import ConfigError
from greenml.hardware.embodied import DEFAULT_LIFETIME_YEARS, LIFETIME_SOURCE, embodied_for_gpu
from greenml.hardware.gpu import GpuSpec, gpu_spec

HOURS_PER_YEAR = 8760.0
IDLE_SHARE = 0.25
IDLE_SOURCE = (
    "greenml's rightsizing assumption (an idle GPU draws 25 % of its TDP; "
    "greenml.diagnose.rightsizing.IDLE_SHARE); give --idle-share from nvidia-smi"
)
SWEEP = (0.25, 0.5, 0.75, 1.0)


@dataclass(frozen=True)
class Plan:
    """One way to get the capacity: its cost and carbon as functions of usage."""

    name: str
    fixed_usd: float
    usd_per_usage: float
    energy_fixed_j: float
    energy_per_usage_j: float
    grid: Grid
    pue: Pue
    embodied_fixed_g: float | None
    embodied_per_usage_g: float | None
    basis: str

    def cost_usd(self, usage: float) -> float:
        return self.fixed_usd + self.usd_per_usage * usage

    def energy_j(self, usage: float) -> float:
        return self.energy_fixed_j + self.energy_per_usage_j * usage

    def co2_g(self, usage: float) -> float | None:
        """Operational CO2eq plus embodied where known (see :attr:`embodied_known`)."""
        operational = self.grid.co2_g(self.energy_j(usage))
        if operational is None:
            return None
        fixed = self.embodied_fixed_g or 0.0
        return operational + fixed + (self.embodied_per_usage_g or 0.0) * usage

    @property
    def embodied_known(self) -> bool:
        return self.embodied_fixed_g is not None

    def at(self, usage: float) -> dict[str, Any]:
        co2 = self.co2_g(usage)
        return {
            "option": self.name,
            "usage": usage,
            "cost_usd": self.cost_usd(usage),
            "energy_kwh": self.energy_j(usage) / 3.6e6,
            "co2_kg": None if co2 is None else co2 / 1000,
            "co2_includes_embodied": self.embodied_known,
        }


@dataclass(frozen=True)
class TcoAdvice:
    """The options compared, break-even usages, and every input with its source."""

    years: float
    gpu: str
    count: int
    usage: float | None
    plans: tuple[Plan, ...]
    skipped: tuple[str, ...]
    break_even: dict[str, str]
    inputs: dict[str, Given]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def plan(self, name: str) -> Plan:
        return next(p for p in self.plans if p.name == name)

    def usages(self) -> tuple[float, ...]:
        return (self.usage,) if self.usage is not None else SWEEP

    def decision(self) -> str:
        if self.usage is not None:
            best = min(self.plans, key=lambda p: p.cost_usd(self.usage or 0.0))
            greenest = _greenest(self.plans, self.usage)
            text = (
                f"at {self.usage:.0%} usage over {self.years:g} years, {best.name} is cheapest "
                f"(${best.cost_usd(self.usage):,.0f})"
            )
            if greenest is not None:
                text += f"; {greenest.name} emits least"
            return text
        texts = "; ".join(self.break_even.values())
        return f"no usage given (--usage): {texts}" if texts else "no usage given: see the table"

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision": self.decision(),
            "years": self.years,
            "gpu": self.gpu,
            "gpus": self.count,
            "usage": self.usage,
            "options": [p.at(u) | {"basis": p.basis} for p in self.plans for u in self.usages()],
            "not_compared": list(self.skipped),
            "break_even": self.break_even,
            "inputs": {k: {"value": g.value, "source": g.source} for k, g in self.inputs.items()},
            "notes": list(self.notes),
        }


def _greenest(plans: tuple[Plan, ...], usage: float) -> Plan | None:
    known = [p for p in plans if p.co2_g(usage) is not None]
    return min(known, key=lambda p: p.co2_g(usage) or 0.0) if known else None


def advise_tco(given: dict[str, Given], measured_power_w: Given | None = None) -> TcoAdvice:
    """Compare buying with renting for the inputs (see :mod:`greenml.advise.tco_inputs`).

    Args:
        given: Inputs by key, each with its source.
        measured_power_w: Busy power per GPU from a measured run, if any.

    Raises:
        ConfigError: No GPU, no hardware price, an unknown instance, or no
            on-demand price.
    """
    inputs = dict(given)
    spec, count, instance = _hardware(inputs)
    years = _default(inputs, "years", DEFAULT_YEARS, f"default: {LIFETIME_SOURCE}")
    hours = years * HOURS_PER_YEAR
    grow = _escalation(inputs, years)
    if spec.tdp_w is None and "power_w" not in inputs and measured_power_w is None:
        raise ConfigError(f"{spec.name} has no TDP in the GPU table: give --power-w")
    tdp = spec.tdp_w or 0.0
    if "power_w" not in inputs:
        upper = f"TDP of {spec.name} (gpus.csv): an upper bound; give --power-w or --workload"
        inputs["power_w"] = measured_power_w or Given(tdp, upper)
    busy_w = float(inputs["power_w"].value)
    idle_w = tdp * _default(inputs, "idle_share", IDLE_SHARE, IDLE_SOURCE)
    if idle_w > busy_w:
        raise ConfigError(
            f"idle power {idle_w:g} W is above the busy power {busy_w:g} W: check --idle-share"
        )
    skipped: list[str] = []
    plans = [_buy(inputs, spec, count, years, hours, busy_w, idle_w, grow)]
    rates = {k: v * grow for k, v in _rates(inputs, instance, count).items()}
    rent_energy = busy_w * count * hours * 3600.0
    cloud_pue = pue_for(provider=instance.split(":", 1)[0])
    provider, _, _ = instance.partition(":")
    cloud_grid = _cloud_grid(inputs, instance)
    embodied_h = _embodied_per_gpu_g(inputs, spec)
    lifetime_h = DEFAULT_LIFETIME_YEARS * HOURS_PER_YEAR
    per_usage_embodied = None if embodied_h is None else embodied_h * count * hours / lifetime_h
    plans.append(Plan(
        "on-demand", 0.0, rates["on-demand"] * hours, 0.0, rent_energy * cloud_pue.value,
        cloud_grid, cloud_pue, 0.0 if embodied_h is not None else None, per_usage_embodied,
        f"{instance} on-demand {rates['on-demand']:g} USD/h for {count} GPUs "
        f"({inputs['on_demand_price'].source})",
    ))  # fmt: skip
    if "reserved_price" in inputs:
        reserved = rates["reserved"]
        plans.append(Plan(
            "reserved", reserved * hours, 0.0, 0.0, rent_energy * cloud_pue.value, cloud_grid,
            cloud_pue, 0.0 if embodied_h is not None else None, per_usage_embodied,
            f"{reserved:g} USD/h for {count} GPUs, every hour of {years:g} years "
            f"({inputs['reserved_price'].source})",
        ))  # fmt: skip
    else:
        skipped.append("reserved: give --reserved-price (USD/h of the instance for the term)")
    spot = _spot(inputs, spec, instance, rates)
    if isinstance(spot, str):
        skipped.append(spot)
    else:
        factor, rate, text = spot
        plans.append(Plan(
            "spot", 0.0, rate * factor * hours, 0.0, rent_energy * factor * cloud_pue.value,
            cloud_grid, cloud_pue, 0.0 if embodied_h is not None else None,
            None if per_usage_embodied is None else per_usage_embodied * factor, text,
        ))  # fmt: skip
    usage = inputs["usage"].value if "usage" in inputs else None
    notes = []
    if embodied_h is None:
        notes.append(f"embodied carbon unknown for {spec.name}: give --embodied-kg (per GPU)")
    if provider and cloud_grid.g_per_kwh is None:
        notes.append(f"cloud intensity: {cloud_grid.source}")
    return TcoAdvice(
        years=years, gpu=spec.name, count=count, usage=usage, plans=tuple(plans),
        skipped=tuple(skipped), break_even=_break_even(plans), inputs=inputs, notes=tuple(notes),
    )  # fmt: skip


def _escalation(inputs: dict[str, Given], years: float) -> float:
    """The mean price over the horizon ÷ today's, for ``price_escalation`` (0: none)."""
    from greenml.accounting.escalation import mean_factor

    rate = _default(inputs, "price_escalation", 0.0, "default: prices stay as today (0 %/year)")
    grow = mean_factor(rate, years)
    if rate:
        inputs["price_escalation"] = Given(
            rate, f"{inputs['price_escalation'].source}; rents and electricity × {grow:.3f} "
            f"(the mean over {years:g} years of prices rising {rate:+.1%} a year)")  # fmt: skip
    return grow


def _default(inputs: dict[str, Given], key: str, value: float, source: str) -> float:
    if key not in inputs:
        inputs[key] = Given(value, source)
    return float(inputs[key].value)


def _hardware(inputs: dict[str, Given]) -> tuple[GpuSpec, int, str]:
    instance = inputs.get("instance")
    key = None
    if instance is not None:
        wanted = str(instance.value).lower()
        key = next((k for k in INSTANCE_GPUS if k.lower().endswith(wanted)), None)
        if key is None:
            raise ConfigError(
                f"instance {instance.value!r} has no known GPUs; use one of "
                + ", ".join(INSTANCE_GPUS)
            )
    if "gpu" in inputs:
        spec = gpu_spec(str(inputs["gpu"].value))
    elif key is not None:
        spec = gpu_spec(INSTANCE_GPUS[key][0])
        inputs["gpu"] = Given(spec.name, f"the GPUs of {key}")
    else:
        raise ConfigError("give --gpu NAME (or --instance TYPE) to compare buying and renting")
    server = server_price(spec.name)
    if "count" not in inputs:
        count = server.gpus if server is not None else (INSTANCE_GPUS[key][1] if key else 1)
        inputs["count"] = Given(count, "GPUs of the packaged server" if server else "default: 1")
    count = int(inputs["count"].value)
    if key is None:
        same = [k for k, (g, _) in INSTANCE_GPUS.items() if g == spec.name]
        key = next((k for k in same if INSTANCE_GPUS[k][1] == count), same[0] if same else None)
        if key is None:
            raise ConfigError(f"no priced instance has {spec.name} GPUs: give --instance TYPE "
                              "and --on-demand-price")  # fmt: skip
        inputs["instance"] = Given(key, f"the packaged instance with {spec.name} GPUs")
    if INSTANCE_GPUS[key][0] != spec.name:
        raise ConfigError(f"{key} has {INSTANCE_GPUS[key][0]} GPUs, not {spec.name}")
    if "hardware_usd" not in inputs:
        if server is None:
            raise ConfigError(
                f"no cited purchase price for {spec.name} servers: give --hardware-usd"
            )
        usd = server.usd / server.gpus * count
        scaled = "" if count == server.gpus else f", × {count}/{server.gpus}"
        where = f"server_prices.csv: {server.source} ({server.date}){scaled}"
        inputs["hardware_usd"] = Given(usd, where)
    return spec, count, key


def _rates(inputs: dict[str, Given], instance: str, count: int) -> dict[str, float]:
    from greenml.accounting.instances import instance_price

    gpus_in = INSTANCE_GPUS[instance][1]
    if "on_demand_price" not in inputs:
        price = instance_price(instance)
        inputs["on_demand_price"] = Given(
            price.on_demand_usd_per_h, f"instance_prices.csv: {price.source} ({price.date})"
        )
    if "spot_price" not in inputs:
        price = instance_price(instance)
        if price.spot_usd_per_h is not None:
            inputs["spot_price"] = Given(
                price.spot_usd_per_h, f"instance_prices.csv: {price.source} ({price.date})"
            )
    scale = count / gpus_in
    out = {"on-demand": float(inputs["on_demand_price"].value) * scale}
    for key, name in (("reserved_price", "reserved"), ("spot_price", "spot")):
        if key in inputs:
            out[name] = float(inputs[key].value) * scale
    return out


def _spot(
    inputs: dict[str, Given], spec: GpuSpec, instance: str, rates: dict[str, float]
) -> tuple[float, float, str] | str:
    if "spot" not in rates:
        return "spot: no spot price listed for the instance: give --spot-price"
    if "checkpoint_cost_s" not in inputs:
        return "spot: give --checkpoint-cost (the interruption model needs it)"
    from greenml.resilience.interval import interruption_rate
    from greenml.schedule.spot_model import SpotJob
    from greenml.schedule.spot_plan import plan_spot

    if "interruption_rate" in inputs:
        per_hour = float(inputs["interruption_rate"].value)
        rate_text = f"{per_hour:g} interruptions/h ({inputs['interruption_rate'].source})"
    else:
        try:
            known = interruption_rate(spec.name)
        except ConfigError as exc:
            return f"spot: {exc} (--interruption-rate)"
        per_hour = known.per_hour
        rate_text = (
            f"{per_hour:g} interruptions/h (packaged default for {known.accelerator}, "
            "see data/SOURCES.md)"
        )
    work_h = _default(inputs, "job_hours", 24.0, "default: a 24 h job between restarts")
    restart = _default(inputs, "restart_cost_s", 300.0, "default of greenml plan spot (5 min)")
    job = SpotJob(work_h * 3600.0, float(inputs["checkpoint_cost_s"].value), restart)
    plan = plan_spot(
        job, interruptions_per_hour=per_hour, spot_usd_per_h=rates["spot"],
        on_demand_usd_per_h=rates["on-demand"], start=datetime.now(timezone.utc), trials=400,
    )  # fmt: skip
    factor = plan.outcome("spot").mean_time_s() / job.work_s
    text = (
        f"{instance} spot {rates['spot']:g} USD/h ({inputs['spot_price'].source}); billed time "
        f"× {factor:.3f} for checkpoints, lost work and restarts at {rate_text}, "
        "greenml plan spot's model"
    )
    return factor, rates["spot"], text


def _buy(
    inputs: dict[str, Given], spec: GpuSpec, count: int, years: float, hours: float,
    busy_w: float, idle_w: float, grow: float = 1.0,
) -> Plan:  # fmt: skip
    residual = _default(inputs, "residual_share", 0.0,
                        "default: straight-line depreciation to zero over the horizon")  # fmt: skip
    yearly = 0.0
    for key in ("staff_usd_per_year", "space_usd_per_year", "maintenance_usd_per_year"):
        yearly += _default(inputs, key, 0.0, "not counted (0): give it to include it")
    pue = _pue(inputs)
    price = _default(inputs, "price", ELECTRICITY_USD_PER_KWH, f"default: {ELECTRICITY_SOURCE}")
    price *= grow  # the mean electricity price over the horizon
    idle_j = idle_w * count * hours * 3600.0 * pue.value
    busy_extra_j = (busy_w - idle_w) * count * hours * 3600.0 * pue.value
    hardware = float(inputs["hardware_usd"].value)
    fixed = hardware * (1 - residual) + yearly * years + idle_j / 3.6e6 * price
    grid = _onprem_grid(inputs)
    embodied = _embodied_per_gpu_g(inputs, spec)
    share = min(1.0, years / DEFAULT_LIFETIME_YEARS)
    return Plan(
        "buy", fixed, busy_extra_j / 3.6e6 * price, idle_j, busy_extra_j, grid, pue,
        None if embodied is None else embodied * count * share, 0.0,
        f"{count}× {spec.name} for ${hardware:,.0f}, residual {residual:.0%}, "
        f"${yearly:,.0f}/year staff+space+maintenance, {price:g} USD/kWh, PUE {pue.value:g}",
    )  # fmt: skip


def _pue(inputs: dict[str, Given]) -> Pue:
    if "pue" in inputs:
        return pue_for(value=float(inputs["pue"].value))
    used = pue_for(provider="datacenter")
    inputs["pue"] = Given(used.value, f"default: {used.source} (cooling included)")
    return used


def _onprem_grid(inputs: dict[str, Given]) -> Grid:
    where = {k: inputs[k].value for k in ("zone", "region", "country") if k in inputs}
    ci = inputs["ci"].value if "ci" in inputs else None
    found = grid_for(ci=ci, **where)
    return found or Grid(None, "unknown: give --zone, --region, --country or --ci")


def _cloud_grid(inputs: dict[str, Given], instance: str) -> Grid:
    from greenml.accounting.instances import instance_price

    price = instance_price(instance)
    return region_grid(price.provider, price.region)


def _embodied_per_gpu_g(inputs: dict[str, Given], spec: GpuSpec) -> float | None:
    if "embodied_kg" in inputs:
        return float(inputs["embodied_kg"].value) * 1000.0
    gpu, host = embodied_for_gpu(spec.name)
    if gpu is None:
        return None
    kg = gpu.kg + (host.kg / (host.gpus_per_host or 1) if host is not None else 0.0)
    share = " (GPU + its share of the host)" if host else ""
    inputs["embodied_kg"] = Given(kg, f"embodied.csv: {gpu.source}{share}")
    return kg * 1000.0


def _break_even(plans: list[Plan]) -> dict[str, str]:
    buy = plans[0]
    out: dict[str, str] = {}
    for plan in plans[1:]:
        if plan.usd_per_usage == 0.0:  # a reservation: flat
            if buy.usd_per_usage <= 0:
                continue
            u = (plan.fixed_usd - buy.fixed_usd) / buy.usd_per_usage
            out[plan.name] = (
                f"buying costs less than {plan.name} below {u:.0%} usage" if 0 < u < 1
                else f"{'buying' if u >= 1 else plan.name} costs less at every usage"
            )  # fmt: skip
            continue
        margin = plan.usd_per_usage - buy.usd_per_usage
        u = buy.fixed_usd / margin if margin > 0 else float("inf")
        out[plan.name] = (
            f"buying pays off against {plan.name} above {u:.0%} usage" if u <= 1
            else f"{plan.name} costs less at every usage"
        )  # fmt: skip
    return out

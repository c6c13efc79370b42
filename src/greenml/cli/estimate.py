"""``greenml estimate``: energy, carbon and cost of a job that was not measured."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from greenml.cli import render
from greenml.cli.options import (
    footprint_options,
    json_option,
    location_options,
    price_option,
    pue_option,
)
from greenml.quantities import round_to
from greenml.store.export import json_text

if TYPE_CHECKING:
    from greenml.estimation.estimator import Estimate

_PRECISIONS = ("fp16", "bf16", "tf32", "fp32", "int8", "fp16_sparse")
_EPILOG = """\b
Examples:
  greenml estimate --gpu H100 --count 8 --hours 100 --utilization 0.8
  greenml estimate --flops 3.14e23 --gpu V100S --mfu 0.4
  greenml estimate --params 70e9 --tokens 15e12 --gpu H100 --count 1024 --zone DE
  greenml estimate --gpu A100 --hours 1082990 --idle-kwh 256646 --ci 57 \\
      --lifetime-years 6 --lifetime-use 0.85     (BLOOM: 39.3 t + 11.2 t embodied)
  greenml estimate --energy-kwh 914 --region us-central1 --year 2021
"""


@click.command(epilog=_EPILOG)
@click.option(
    "--gpu", metavar="NAME",
    help="GPU model or alias: H100, A100-SXM4-40GB, T4 (optional with --energy-kwh).",
)  # fmt: skip
@click.option("--count", type=int, default=1, show_default=True, help="Devices in parallel.")
@click.option("--hours", type=float, help="Wall-clock hours per device (device-hours mode).")
@click.option("--flops", type=float, help="Total floating-point operations (compute mode).")
@click.option("--params", type=float, help="Model parameters, e.g. 70e9 (with --tokens).")
@click.option("--tokens", type=float, help="Training tokens, e.g. 15e12 (with --params).")
@click.option("--mfu", type=float, help="Model FLOPs utilization in (0, 1]  [default: 1.0 = peak]")
@click.option(
    "--precision",
    type=click.Choice(_PRECISIONS, case_sensitive=False),
    help="Which peak the FLOPs run at  [default: fp16]",
)
@click.option("--utilization", type=float, help="Share of TDP drawn, in (0, 1]  [default: 1.0]")
@click.option("--power-w", type=float, help="Average watts per device (e.g. measured); not TDP.")
@click.option("--energy-kwh", type=float,
              help="A measured IT energy of the job, kWh: carbon, water and cost from it.")
@click.option("--cpu-cores", type=float, help="Host CPU cores the job holds (all nodes).")
@click.option("--cpu-core-w", type=float, help="Host power per core, W (CPU TDP ÷ cores).")
@click.option("--cpu-usage", type=float, help="Share of the cores busy, (0, 1]  [default: 1.0]")
@click.option("--host-memory-gb", type=float, help="Host memory the job holds, GB (0.3725 W/GB).")
@click.option("--idle-kwh", type=float, help="Idle cluster energy over the job, kWh.")
@click.option("--idle-w", type=float, help="Idle cluster power over the job's wall time, W.")
@pue_option
@location_options
@footprint_options
@click.option(
    "--embodied-kg", type=float, help="Embodied kg CO2eq per GPU (default: the cited table)."
)
@click.option("--lifetime-years", type=float, help="Hardware lifespan  [default: 4]")
@click.option("--lifetime-use", type=float,
              help="Share of the lifespan in use, (0, 1]  [default: 1.0]")
@click.option("--year", type=int,
              help="Data year of the --zone, --region or --country factor  [default: newest]")
@price_option
@click.option("--trials", type=int, default=1, show_default=True, help="Times the job runs.")
@json_option("Print the estimate as JSON on stdout.")
def estimate(
    gpu: str | None,
    count: int,
    hours: float | None,
    flops: float | None,
    params: float | None,
    tokens: float | None,
    mfu: float | None,
    precision: str | None,
    utilization: float | None,
    power_w: float | None,
    energy_kwh: float | None,
    cpu_cores: float | None,
    cpu_core_w: float | None,
    cpu_usage: float | None,
    host_memory_gb: float | None,
    idle_kwh: float | None,
    idle_w: float | None,
    pue: str | None,
    zone: str | None,
    region: str | None,
    country: str | None,
    ci: float | None,
    supplier_ci: float | None,
    certificates: tuple[str, ...],
    market_file: str | None,
    wue: str | None,
    embodied_kg: float | None,
    lifetime_years: float | None,
    lifetime_use: float | None,
    year: int | None,
    price: float | None,
    trials: int,
    as_json: bool,
) -> None:
    """Estimate the energy, CO2eq and cost of a job from device-hours, FLOPs or params × tokens."""
    from greenml.accounting.footprint import prepare_footprint
    from greenml.accounting.location import resolve_intensity_source
    from greenml.estimation.estimator import estimate as run_estimate
    from greenml.estimation.parts import HostPower

    if year is None:
        source, description = resolve_intensity_source(region=region, zone=zone, country=country,
                                                       ci=ci)  # fmt: skip
    else:
        source, description = _source_of_year(year, zone=zone, region=region, country=country,
                                               ci=ci)  # fmt: skip
    footprint = prepare_footprint(
        supplier_ci=supplier_ci, certificates=certificates, market_file=market_file, wue=wue,
        zone=zone, region=region, country=country, embodied_kg=embodied_kg,
        lifetime_years=lifetime_years, lifetime_use=lifetime_use,
    )  # fmt: skip
    host = HostPower(cpu_cores, cpu_core_w, cpu_usage, host_memory_gb)
    result = run_estimate(
        gpu=gpu,
        count=count,
        hours=hours,
        flops=flops,
        params=params,
        tokens=tokens,
        mfu=mfu,
        precision=precision.lower() if precision else None,
        utilization=utilization,
        power_w=power_w,
        pue=_parse_pue(pue),
        ci=source,
        ci_description=description,
        price=price,
        trials=trials,
        footprint=footprint,
        energy_kwh=energy_kwh,
        host=host,
        idle_kwh=idle_kwh,
        idle_w=idle_w,
    )
    if as_json:
        click.echo(json_text(result.to_json(), indent=2, ensure_ascii=False))
        return
    out = render.console()
    out.print(summary_table(result))
    if result.equivalences:
        out.print(equivalence_table(result))
    out.print("formula:")
    for line in result.formula.splitlines():
        out.print(f"  {line}", markup=False)
    out.print(assumptions_table(result))
    for note in result.notes:
        out.print(f"note: {note}", markup=False)


def _source_of_year(
    year: int, *, zone: str | None, region: str | None, country: str | None, ci: float | None
) -> tuple[Any, str]:
    """The factor of one named year: exactly one of --zone, --region, --country."""
    from greenml.accounting import static
    from greenml.errors import ConfigError

    named = {k: v for k, v in (("zone", zone), ("region", region), ("country", country)) if v}
    if ci is not None or len(named) != 1:
        raise ConfigError("--year picks the year of one --zone, --region or --country factor; "
                          "give exactly one of them (and no --ci)")  # fmt: skip
    ((key, value),) = named.items()
    text = f"--{key} {value} --year {year}"
    if key == "zone":
        return static.zone_source(value, year=year), text
    if key == "region":
        return static.cloud_region_source(value, year=year), text
    return static.country_source(value, year=year), text


def _parse_pue(text: str | None) -> float | str | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return text


def summary_table(e: Estimate) -> Any:
    """Energy (IT and facility), CO2eq, cost and device-hours."""
    from rich.table import Table

    from greenml.estimation.inputs import mass_text, num

    title = f"greenml estimate · {e.gpu.name if e.gpu else 'no device'} · {e.mode}"
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_column("basis", overflow="fold")
    s = e.spread
    pm = ""
    if s is not None:
        pm = " (lower bound)" if s.lower_bound else f" {render.percent(s.energy_rel)}"
    per_device = "measured total" if e.power_w is None else f"{num(e.power_w)} W per device"
    if len(e.parts) > 1:
        per_device += "; " + " + ".join(f"{p.name} {render.energy(p.energy_j)}" for p in e.parts)
    table.add_row("energy (IT)", render.energy(e.it_energy_j) + pm, per_device)
    table.add_row("energy (facility)", render.energy(e.energy_j) + pm, f"PUE {e.pue.value:g}")
    if s is not None and s.bounds:
        table.add_row("bounds", "", s.bounds)
    co2_rel = s.co2_rel if s is not None and not s.lower_bound else None
    co2 = "unknown" if e.co2_g is None else mass_text(round_to(e.co2_g, co2_rel))
    if e.co2_g is not None and s is not None and s.co2_rel is not None:
        co2 += " (lower bound)" if s.lower_bound else f" {render.percent(s.co2_rel)}"
    ci = "" if e.intensity_g_per_kwh is None else f"{num(e.intensity_g_per_kwh)} g/kWh, "
    table.add_row("CO2eq (location-based)", co2, f"{ci}{e.intensity_source}")
    for row in footprint_rows(e.footprint or {}):
        table.add_row(*row)
    cost_rel = s.energy_rel if s is not None and not s.lower_bound else None
    cost = "-" if e.cost_usd is None else f"${num(round_to(e.cost_usd, cost_rel))}"
    if e.cost_usd is not None and s is not None:  # energy × an exact price: the energy's ±
        cost += " (lower bound)" if s.lower_bound else f" {render.percent(s.energy_rel)}"
    table.add_row("cost", cost, "" if e.cost_usd is not None else "no --price given")
    table.add_row("device-hours", num(e.device_hours), f"wall-clock {num(e.wall_hours)} h")
    if s is not None:
        table.add_row("method", "estimated", f"uncertainty: {s.basis}")
    return table


def equivalence_table(e: Estimate) -> Any:
    """Everyday equivalences with their factors."""
    from rich.table import Table

    from greenml.estimation.inputs import num

    table = Table(title="equivalent to", title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("amount", justify="right")
    table.add_column("of")
    table.add_column("factor", overflow="fold")
    for eq in e.equivalences:
        table.add_row(num(eq.value, 3), eq.label, eq.factor.description)
    return table


def assumptions_table(e: Estimate) -> Any:
    """Every input and default with its source."""
    from rich.table import Table

    table = Table(title="assumptions", title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("input")
    table.add_column("value", justify="right")
    table.add_column("source", overflow="fold")
    for name, item in e.assumptions.items():
        value = item["value"]
        shown = "-" if value is None else (f"{value:g}" if isinstance(value, float) else value)
        table.add_row(name, str(shown), str(item["source"]))
    return table


def footprint_rows(blocks: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Rows for market-based CO2eq, embodied CO2eq and water, each with its basis."""
    rows = []
    if blocks.get("carbon_market"):
        rows.append(("CO2eq (market-based)", *_market_row(blocks["carbon_market"])))
    if blocks.get("embodied"):
        rows.append(("CO2eq (embodied)", *_embodied_row(blocks["embodied"])))
    if blocks.get("water"):
        rows.append(("water", *_water_row(blocks["water"])))
    return rows


def _with_spread(text: str, block: dict[str, Any]) -> str:
    rel = block.get("uncertainty_rel")
    return text if rel is None else f"{text} {render.percent(rel)}"


def _market_row(market: dict[str, Any]) -> tuple[str, str]:
    from greenml.estimation.inputs import mass_text

    kg = market.get("kg")
    rel = market.get("uncertainty_rel")
    value = "unknown" if kg is None else _with_spread(mass_text(round_to(kg * 1000, rel)), market)
    parts = market.get("parts") or []
    energy = sum(p["kwh"] for p in parts) or 1.0
    basis = "; ".join(f"{p['kwh'] / energy:.0%} {p['basis']}: {p['source']}" for p in parts)
    basis = basis or str(market.get("hint") or market.get("reason") or "")
    if market.get("offsets_kg"):
        offsets = mass_text(market["offsets_kg"] * 1000)
        basis += f"; offsets {offsets} listed apart, not subtracted"
    return value, basis


def _embodied_row(embodied: dict[str, Any]) -> tuple[str, str]:
    from greenml.estimation.inputs import mass_text

    kg = embodied.get("kg")
    if kg is None:
        return "unknown", "; ".join(embodied.get("missing") or [])
    terms = "; ".join(f"{t['item']} ({t['basis']})" for t in embodied.get("terms") or [])
    grams = round_to(kg * 1000, embodied.get("uncertainty_rel"))
    return _with_spread(mass_text(grams), embodied), terms


def _water_row(water: dict[str, Any]) -> tuple[str, str]:
    from greenml.estimation.inputs import num

    litres = water.get("litres")
    rel = water.get("uncertainty_rel")
    value = "unknown" if litres is None else _with_spread(f"{num(round_to(litres, rel))} L", water)
    onsite = num(water.get("onsite_l") or 0.0)
    basis = f"on-site {onsite} L (WUE {water.get('wue_l_per_kwh')} L/kWh)"
    offsite = water.get("offsite_l")
    if offsite is None:
        return value, f"{basis}; {water.get('offsite_reason')}"
    return value, f"{basis}, off-site {num(offsite)} L ({water.get('ewif_l_per_kwh')} L/kWh)"

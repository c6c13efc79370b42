"""``greenml advise tco``: buy on-premises hardware or rent cloud capacity, over N years."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from greenml.cli import render
from greenml.cli.options import (
    db_option,
    instance_option,
    json_option,
    location_options,
    parse_share,
    price_option,
    pue_number,
    pue_option,
    signed_share,
)
from greenml.errors import ConfigError
from greenml.store.export import json_text

_EPILOG = """\b
Examples:
  greenml advise tco --gpu "H100 SXM" --usage 60% --checkpoint-cost 2m --spot-price 40
  greenml advise tco --config tco.toml --workload 5b1463e4 --zone DE
"""


_DIRECT = (
    "gpu", "count", "instance", "years", "hardware_usd", "power_w", "price",
    "staff_usd_per_year", "space_usd_per_year", "maintenance_usd_per_year", "on_demand_price",
    "reserved_price", "spot_price", "embodied_kg", "zone", "region", "country", "ci",
)  # fmt: skip


@click.command(epilog=_EPILOG)
@db_option
@click.option(
    "--config",
    "config_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    metavar="TOML",
    help="A file with a [tco] table (keys: the flags' names with underscores).",
)
@click.option(
    "--workload", "run_id", metavar="RUN_ID", help="A measured run: its GPU power and duration."
)
@click.option(
    "--runs-per-year", type=float, help="How often the job runs (usage = runs × its duration)."
)
@click.option("--gpu", metavar="NAME", help="The GPU to buy or rent (e.g. 'H100 SXM').")
@click.option("--count", type=int, help="GPUs  [default: the packaged server's, or 1]")
@instance_option
@click.option("--years", type=float, help="Horizon and depreciation period  [default: 4]")
@click.option("--usage", metavar="PERCENT", help="Share of the hours the GPUs do useful work.")
@click.option("--hardware-usd", type=float, help="Purchase price of the servers.")
@click.option("--residual-share", metavar="PERCENT", help="Resale value at the end  [default: 0]")
@click.option("--power-w", type=float, help="Average watts per device (e.g. measured); not TDP.")
@click.option("--idle-share", metavar="PERCENT", help="Idle power as a share of TDP [default: 25%]")
@pue_option
@price_option
@click.option(
    "--price-trace",
    type=click.Path(exists=True, dir_okay=False, path_type=str),
    metavar="CSV",
    help="Hourly electricity prices (USD/MWh): their mean is the price.",
)
@click.option("--staff-usd-per-year", type=float, help="Staff cost of running the servers.")
@click.option("--space-usd-per-year", type=float, help="Rack space, colocation.")
@click.option("--maintenance-usd-per-year", type=float, help="Support contracts, repairs.")
@click.option("--on-demand-price", type=float, metavar="USD_PER_H", help="On-demand price / hour.")
@click.option("--reserved-price", type=float, metavar="USD_PER_H", help="Reserved price / hour.")
@click.option("--spot-price", type=float, metavar="USD_PER_H", help="Spot price per hour.")
@click.option("--checkpoint-cost", metavar="DURATION", help="Time one checkpoint takes.")
@click.option(
    "--restart-cost",
    metavar="DURATION",
    help="Interruption to computing again: new instance, start-up, reload.",
)
@click.option("--interruption-rate", metavar="RATE", help="Interruptions per hour: 0.023 or 2.3%.")
@click.option("--embodied-kg", type=float, help="Embodied kg CO2eq per GPU (host share included).")
@click.option("--price-escalation", metavar="PERCENT",
              help="Yearly change of rents and electricity prices, e.g. 3% [default: 0%].")
@location_options
@json_option("Print the comparison as JSON on stdout.")
def tco(**opts: Any) -> None:
    """Total cost of ownership: buy on-premises or rent (on-demand, reserved, spot) over N years."""
    from greenml.advise.tco import advise_tco
    from greenml.advise.tco_inputs import Given, load_toml, merge
    from greenml.schedule.timeparse import parse_duration_s

    file = load_toml(opts["config_file"]) if opts["config_file"] else {}
    flags: dict[str, Any] = {k: opts[k] for k in _DIRECT}
    rate = opts.pop("interruption_rate")
    flags["interruption_rate"] = parse_share(rate, "--interruption-rate") if rate else None
    for key in ("usage", "residual_share", "idle_share"):
        flag = "--" + key.replace("_", "-")
        flags[key] = parse_share(opts[key], flag) if opts[key] is not None else None
    flags["pue"] = pue_number(opts["pue"])
    escalation = opts.pop("price_escalation")
    flags["price_escalation"] = signed_share(escalation) if escalation else None
    for key, flag in (("checkpoint_cost", "--checkpoint-cost"), ("restart_cost", "--restart-cost")):
        text = opts[key]
        flags[key + "_s"] = parse_duration_s(text, flag, allow_zero=True) if text else None
    trace = opts.pop("price_trace")
    if trace is not None:
        if flags["price"] is not None:
            raise ConfigError("give --price or --price-trace, not both")
        flags["price"] = _trace_mean_usd_per_kwh(trace)
    given = merge(flags, file, str(opts["config_file"]) if opts["config_file"] else None)
    if trace is not None:
        how = f"mean of --price-trace {trace} (every hour alike: usage is not placed in time)"
        given["price"] = Given(given["price"].value, how)
    power = None
    if opts["run_id"]:
        power, gpu, duration_s, run = _measured(opts["db_url"], opts["run_id"])
        if gpu is not None and "gpu" not in given:
            given["gpu"] = Given(gpu, f"the GPU of run {run}")
        if opts["runs_per_year"] is not None and "usage" not in given:
            usage = opts["runs_per_year"] * duration_s / (8760 * 3600.0)
            if usage > 1:
                raise ConfigError(
                    f"{opts['runs_per_year']:g} runs a year of {duration_s:.0f} s each need "
                    f"{usage:.0%} of the hours: more than one machine"
                )
            given["usage"] = Given(usage, f"{opts['runs_per_year']:g} runs/year × run {run}'s "
                                   f"{duration_s:.4g} s as measured (on its own hardware, "
                                   "not scaled to the GPU)")  # fmt: skip
    elif opts["runs_per_year"] is not None:
        raise ConfigError("--runs-per-year needs --workload RUN_ID (the run's duration)")
    advice = advise_tco(given, power)
    if opts["as_json"]:
        click.echo(json_text(advice.to_dict(), indent=2, ensure_ascii=False))
        return
    _print(advice)


def _trace_mean_usd_per_kwh(path: str) -> float:
    from greenml.accounting.cost import PriceTrace

    series = PriceTrace.from_csv(path).series
    mean = series.mean(series.start_s, series.end_s) / 1000.0
    if mean < 0:
        raise ConfigError(f"--price-trace {path}: its mean price is negative ({mean:g} USD/kWh)")
    return mean


def _measured(db_url: str | None, run_id: str) -> Any:
    """(GPU power or None, GPU name or None, duration in s, run id) of a stored run."""
    from greenml.advise.runs import load_workload
    from greenml.advise.tco_inputs import Given
    from greenml.cli.runs import open_ingested

    with open_ingested(db_url) as store:
        record = store.get_record(run_id)
        work, _ = load_workload(store, run_id, flops=1.0)
    run = str(record["id"])
    duration = float(work.measured_duration_s or 0.0)
    spec = work.measured_gpu
    if spec is None or work.measured_power_share is None:
        return None, None, duration, run
    watts = (spec.tdp_w or 0.0) * work.measured_power_share
    return Given(watts, f"measured: mean GPU power of run {run}"), spec.name, duration, run


def _print(advice: Any) -> None:
    from rich.table import Table

    out = render.console()
    out.print(f"{advice.count}× {advice.gpu} over {advice.years:g} years", highlight=False)
    table = Table(show_edge=False, pad_edge=False, title="cost and carbon", title_justify="left")
    for name in ("usage", "option", "cost", "energy", "CO2eq"):
        table.add_column(name, justify="right" if name != "option" else "left")
    for usage in advice.usages():
        for plan in advice.plans:
            row = plan.at(usage)
            co2 = "unknown" if row["co2_kg"] is None else render.co2(row["co2_kg"])
            if row["co2_kg"] is not None and not row["co2_includes_embodied"]:
                co2 += " + embodied?"
            table.add_row(f"{usage:.0%}", plan.name, f"${row['cost_usd']:,.0f}",
                          f"{row['energy_kwh']:,.0f} kWh", co2)  # fmt: skip
    out.print(table)
    out.print("options:")
    for plan in advice.plans:
        out.print(f"  {plan.name}: {plan.basis}", highlight=False, markup=False)
        out.print(f"    intensity: {plan.grid.source}", highlight=False, markup=False)
    for text in advice.skipped:
        out.print(f"  not compared — {text}", highlight=False, markup=False)
    out.print("break-even:")
    for name, text in advice.break_even.items():
        out.print(f"  vs {name}: {text}", highlight=False, markup=False)
    out.print("inputs:")
    for key, item in advice.inputs.items():
        value = item.value
        shown = f"{value:,.4g}" if isinstance(value, float) else str(value)
        out.print(f"  {key} = {shown} — {item.source}", highlight=False, markup=False)
    for note in advice.notes:
        out.print(f"  note: {note}", highlight=False, markup=False)
    out.print(f"decision: {advice.decision()}", highlight=False, markup=False)

"""``greenml plan spot``: spot, on-demand or hybrid for a job, with its checkpoint interval."""

from __future__ import annotations

from typing import Any

import click

from greenml.cli import render
from greenml.cli.emit_options import cloud_infra, emit_options, write_emit
from greenml.cli.options import instance_option, json_option, parse_share, region_option
from greenml.errors import ConfigError
from greenml.schedule.timeparse import parse_duration_s, parse_instant
from greenml.store.export import json_text

NOTICE_S = {"aws": 120.0, "gcp": 30.0, "azure": 30.0, "none": 0.0}


@click.command()
@click.option("--work", required=True, metavar="DURATION", help="Compute the job needs (e.g. 24h).")
@click.option(
    "--checkpoint-cost", required=True, metavar="DURATION", help="Time one checkpoint takes."
)
@click.option(
    "--restart-cost",
    default="5m",
    show_default=True,
    metavar="DURATION",
    help="Interruption to computing again: new instance, start-up, reload.",
)
@click.option(
    "--notice",
    default="none",
    show_default=True,
    metavar="aws|gcp|azure|none|DURATION",
    help="Warning before an interruption; when it covers a checkpoint, progress is kept.",
)
@click.option("--gpu", metavar="NAME", help="Use the default interruption rate of A100/V100/H100.")
@click.option("--interruption-rate", metavar="RATE", help="Interruptions per hour: 0.023 or 2.3%.")
@click.option(
    "--interruption-rates",
    "rates_csv",
    metavar="CSV",
    help="Per-region rates for --gpu: columns gpu,region,rate_per_hour[,source]; "
    "regions not listed use the default.",
)
@click.option("--weekend-factor", type=float, help="Rate multiplier on Saturdays and Sundays.")
@click.option("--spot-price", type=float, metavar="USD_PER_H", help="Spot price per hour.")
@click.option("--on-demand-price", type=float, metavar="USD_PER_H", help="On-demand price / hour.")
@instance_option
@click.option(
    "--start", default="now", show_default=True, metavar="TIME",
    help="When the job starts (ISO-8601).",
)  # fmt: skip
@click.option(
    "--deadline", metavar="TIME", help="Latest finish: ISO-8601 or +DURATION from the start."
)
@click.option("--confidence", default="95%", show_default=True, help="Required on-time share.")
@click.option("--trials", default=2000, show_default=True, type=click.IntRange(1, 200_000))
@click.option("--seed", default=0, show_default=True, type=int)
@json_option("Print the plan as JSON on stdout.")
@region_option(
    candidates=True,
    help="A cloud region for --emit and --interruption-rates, e.g. aws:us-east-1 (repeatable).",
)
@emit_options
def spot(**opts: Any) -> None:
    """Plan a job on spot capacity: expected cost and time, and the strategy to use."""
    from greenml.schedule.spot_model import SpotJob
    from greenml.schedule.spot_plan import plan_spot

    start = parse_instant(opts["start"], "--start")
    job = SpotJob(
        work_s=parse_duration_s(opts["work"], "--work"),
        checkpoint_cost_s=parse_duration_s(opts["checkpoint_cost"], "--checkpoint-cost"),
        restart_cost_s=_duration_or_zero(opts["restart_cost"], "--restart-cost"),
        notice_s=_notice_s(opts["notice"]),
    )
    rate, weekend, rate_source, by_region = _rate(opts)
    spot_price, on_demand_price = _prices(opts)
    deadline_s = None
    if opts["deadline"]:
        deadline = parse_instant(opts["deadline"], "--deadline", now=start)
        deadline_s = (deadline - start).total_seconds()
    plan = plan_spot(
        job,
        interruptions_per_hour=rate,
        spot_usd_per_h=spot_price,
        on_demand_usd_per_h=on_demand_price,
        start=start,
        weekend_factor=weekend,
        rate_source=rate_source,
        rates_by_region=by_region,
        deadline_s=deadline_s,
        confidence=parse_share(opts["confidence"], "--confidence"),
        trials=opts["trials"],
        seed=opts["seed"],
    )
    if opts["emit"]:
        write_emit(
            opts,
            infras=[cloud_infra(r) for r in opts["regions"]],
            use_spot=plan.recommended != "on-demand",
            pieces=[(start, plan.outcome(plan.recommended).time_quantile_s(0.99))],
            note=f"greenml plan spot: {plan.recommended} recommended ({plan.reason})",
        )
    if opts["as_json"]:
        click.echo(json_text(plan.to_dict(), indent=2))
        return
    _render(plan)


def _duration_or_zero(text: str, what: str) -> float:
    return 0.0 if text.strip() in ("0", "0s", "none") else parse_duration_s(text, what)


def _notice_s(text: str) -> float:
    key = text.strip().lower()
    return NOTICE_S[key] if key in NOTICE_S else parse_duration_s(text, "--notice")


def _rate(opts: dict[str, Any]) -> tuple[float, float, str, list[dict[str, Any]]]:
    """The rate to simulate, the weekend factor, where the rate came from, and per region."""
    from greenml.resilience.interval import interruption_rate

    if opts["interruption_rate"] and (opts["gpu"] or opts["rates_csv"]):
        raise ConfigError("give --interruption-rate or --gpu (with --interruption-rates), not both")
    if opts["interruption_rate"]:
        rate = parse_share(opts["interruption_rate"], "--interruption-rate")
        weekend = opts["weekend_factor"] if opts["weekend_factor"] is not None else 1.0
        return rate, weekend, "given (--interruption-rate)", []
    if opts["rates_csv"] and not opts["gpu"]:
        raise ConfigError("--interruption-rates needs --gpu: its rows are per GPU and region")
    if opts["gpu"] and opts["rates_csv"]:
        return _regional_rate(opts)
    if opts["gpu"]:
        known = interruption_rate(opts["gpu"])
        weekend = opts["weekend_factor"]
        if weekend is None:
            weekend = known.weekend_factor
        source = f"default for {known.accelerator}: {known.source}"
        if opts["regions"]:
            source += "; the same in every region (give --interruption-rates for regional rates)"
        return known.per_hour, weekend, source, []
    raise ConfigError("give the interruption rate: --gpu A100|V100|H100 or --interruption-rate")


def _regional_rate(opts: dict[str, Any]) -> tuple[float, float, str, list[dict[str, Any]]]:
    """The highest rate among the --region's: the task may land in any of them."""
    from greenml.resilience.interval import interruption_rate
    from greenml.schedule.spot_rates import RateTable, regional_rates

    table = RateTable.from_csv(opts["rates_csv"])
    applied = regional_rates(opts["gpu"], opts["regions"], table)
    worst = max(applied, key=lambda a: a.per_hour)
    weekend = opts["weekend_factor"]
    if weekend is None:
        try:
            weekend = interruption_rate(opts["gpu"]).weekend_factor
        except ConfigError:
            weekend = 1.0
    source = worst.describe(opts["gpu"])
    if len(applied) > 1:
        source = f"the highest of the --region rates, {source}"
    return worst.per_hour, weekend, source, [a.to_dict() for a in applied]


def _prices(opts: dict[str, Any]) -> tuple[float, float]:
    on_demand = opts["on_demand_price"]
    if opts["instance"]:
        from greenml.accounting.instances import instance_price

        if on_demand is not None:
            raise ConfigError("give --instance or --on-demand-price, not both")
        on_demand = instance_price(opts["instance"]).usd_per_h
    if on_demand is None or opts["spot_price"] is None:
        raise ConfigError(
            "give --spot-price and the on-demand price (--on-demand-price or --instance); "
            "spot prices change by the hour, so greenml does not guess one"
        )
    return float(opts["spot_price"]), float(on_demand)


def _render(plan: Any) -> None:
    from rich.table import Table

    table = Table(title=f"Spot plan (Monte Carlo, {len(plan.outcomes[0].trials)} trials)")
    for column in ("strategy", "mean cost", "p90 cost", "mean time", "p90 time", "on time",
                   "interruptions", "work lost"):  # fmt: skip
        table.add_column(column, justify="left" if column == "strategy" else "right")
    for outcome in plan.outcomes:
        row = outcome.to_dict(plan.deadline_s)
        marker = " ←" if outcome.strategy == plan.recommended else ""
        table.add_row(
            outcome.strategy + marker,
            render.usd(row["mean_cost_usd"]),
            render.usd(row["cost_p90_usd"]),
            render.duration(row["mean_time_s"]),
            render.duration(row["time_p90_s"]),
            f"{row['on_time_share']:.1%}" if plan.deadline_s is not None else "–",
            f"{row['mean_interruptions']:.2f}",
            render.duration(row["mean_lost_work_s"]),
        )
    out = render.console()
    out.print(table)
    out.print(
        f"Checkpoint every {render.duration(plan.daly_interval_s)} of work (Daly; Young: "
        f"{render.duration(plan.young_interval_s)}) for a "
        f"{render.duration(plan.job.checkpoint_cost_s)} checkpoint at "
        f"{plan.rates.per_hour:.2%}/h interruptions."
    )
    out.print(f"Interruption rate: {plan.rate_source}.", highlight=False, markup=False)
    for row in plan.rates_by_region:
        out.print(
            f"  {row['region'] or 'any region'}: {row['interruptions_per_hour']:.2%}/h "
            f"({row['from']}) — {row['source']}",
            highlight=False,
            markup=False,
        )
    out.print(f"Recommended: [bold]{plan.recommended}[/bold] — {plan.reason}.")

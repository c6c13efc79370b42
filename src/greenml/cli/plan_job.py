"""``greenml plan job``: when and where to run a job for less carbon (and cost)."""

from __future__ import annotations

from typing import Any

import click

from greenml.cli import render
from greenml.cli.emit_options import cloud_infra, emit_options, write_emit
from greenml.cli.options import (
    intensity_provider_option,
    json_option,
    parse_share,
    region_option,
    renamed,
    zone_option,
)
from greenml.errors import ConfigError
from greenml.store.export import json_text


@click.command()
@click.option("--duration", metavar="DURATION", help="Run time: 90m, 4h, 1d, 1h30m.")
@click.option("--energy-kwh", type=float, help="Energy instead of a duration (needs --power-w).")
@click.option("--deadline", required=True, metavar="TIME", help="Latest finish (ISO-8601).")
@click.option("--earliest-start", metavar="TIME", help="Not before this (default: --now).")
@click.option(
    "--now",
    "now_text",
    metavar="TIME",
    help="Forecast origin: history before it is known (default: --earliest-start, else the clock).",
)
@zone_option(candidates=True)
@region_option(candidates=True)
@click.option("--allow", multiple=True, metavar="LOC", help="Only these may hold the data.")
@click.option(
    "--intensity-trace",
    "traces",
    multiple=True,
    metavar="[LOC=]CSV",
    help="Hourly intensity CSV of a candidate (repeatable; several files of one place join).",
)
@click.option(
    "--trace-as-forecast",
    is_flag=True,
    help="Take the traces' values in the window as known instead of forecasting from history.",
)
@intensity_provider_option
@renamed("--provider", "--intensity-provider", "intensity_provider")
@click.option(
    "--price-trace",
    "price_traces",
    multiple=True,
    metavar="[LOC=]CSV",
    help="Electricity price CSV (Datetime (UTC), Price (USD/MWh)) of a candidate.",
)
@click.option("--power-w", type=float, help="The job's constant draw in watts.")
@click.option("--interruptible", is_flag=True, help="The job may run in pieces.")
@click.option("--min-chunk", default="30m", show_default=True, metavar="DURATION",
              help="Shortest piece.")  # fmt: skip
@click.option("--max-pieces", type=int, metavar="N", help="Most pieces (default: no limit).")
@click.option("--carbon-weight", type=float, help="0–1: weight of carbon against cost.")
@click.option("--max-cost-increase", metavar="PCT", help="Least carbon with cost ≤ baseline + PCT.")
@json_option("Print the plan as JSON on stdout.")
@emit_options
def job(**opts: Any) -> None:
    """Plan a job in the greenest (or cheapest) hours and places before its deadline.

    The baseline is "start now, here": at the earliest start, in the first
    --zone (or the first --region when no zone is given). A candidate with
    an --intensity-trace is forecast from the trace's history before --now
    (seasonal forecaster), or, with --trace-as-forecast, the trace's values
    are taken as known; others use a live provider's forecast (--intensity-provider)
    or a yearly mean (only where, not when). Example, replaying early 2023 with the
    sample traces shipped with greenml (full years: Electricity Maps data portal):

    \b
      greenml plan job --duration 4h --now 2023-02-10T00:00Z \\
        --deadline 2023-02-11T00:00Z --zone DE-LU --zone GB \\
        --intensity-trace DE-LU=DE-LU_2023_sample.csv \\
        --intensity-trace GB=GB_2023_sample.csv --power-w 300
    """
    from greenml.schedule.objective import Objective
    from greenml.schedule.planner import plan_job

    job_, now = _job(opts)
    candidates = [*opts["zones"], *opts["regions"]]
    if not candidates:
        raise ConfigError("no candidate location: give --zone or --region (repeatable)")
    traces = _assign(opts["traces"], candidates, "--intensity-trace")
    prices = _assign(opts["price_traces"], candidates, "--price-trace")
    forecasts = {c: _intensity(c, c in opts["zones"], traces.get(c, []), opts, job_)
                 for c in candidates}  # fmt: skip
    price_sources = {c: _price(files) for c, files in prices.items()}
    weight = 1.0 if opts["carbon_weight"] is None else opts["carbon_weight"]
    cap = (
        parse_share(opts["max_cost_increase"], "--max-cost-increase", at_most=None)
        if opts["max_cost_increase"]
        else None
    )
    if cap is not None and opts["carbon_weight"] is not None:
        raise ConfigError("give --carbon-weight or --max-cost-increase, not both")
    plan = plan_job(
        job_, candidates, history_or_forecast=forecasts, objective=Objective(weight, cap),
        now=now, allow=opts["allow"] or None, prices=price_sources or None,
    )  # fmt: skip
    if opts["emit"]:
        _emit(opts, plan, job_)
    if opts["as_json"]:
        print(json_text(plan.to_dict(), ensure_ascii=False, indent=2))
        return
    _show(plan, job_)


def _emit(opts: dict[str, Any], plan: Any, job_: Any) -> None:
    note = f"greenml plan job: planned start {plan.start:%Y-%m-%dT%H:%MZ} in {plan.location}"
    infras = [cloud_infra(plan.location)] if opts["emit"] == "skypilot" else []
    pieces = [(c.start, c.duration_s) for c in plan.chunks] or [(plan.start, job_.duration_s)]
    write_emit(opts, infras=infras, use_spot=False, pieces=pieces, deadline=job_.deadline,
               note=note)  # fmt: skip


def _job(opts: dict[str, Any]) -> tuple[Any, Any]:
    from datetime import datetime, timezone

    from greenml.schedule.job import Job
    from greenml.schedule.timeparse import parse_duration_s, parse_instant

    clock = datetime.now(timezone.utc)
    now = parse_instant(opts["now_text"], "--now", clock) if opts["now_text"] else None
    start_text = opts["earliest_start"]
    start = parse_instant(start_text, "--earliest-start", now or clock) if start_text else None
    now = now or start or clock
    start = start or now
    deadline = parse_instant(opts["deadline"], "--deadline", start)
    common = {
        "interruptible": opts["interruptible"],
        "max_pieces": opts["max_pieces"],
        "min_chunk_s": parse_duration_s(opts["min_chunk"], "--min-chunk"),
    }
    if opts["energy_kwh"] is not None:
        if opts["duration"]:
            raise ConfigError("give --duration or --energy-kwh, not both")
        if opts["power_w"] is None:
            raise ConfigError("--energy-kwh needs --power-w (duration = energy ÷ power)")
        energy_j = opts["energy_kwh"] * 3.6e6
        return Job.from_energy(energy_j, opts["power_w"], start, deadline, **common), now
    if not opts["duration"]:
        raise ConfigError("give --duration (e.g. 4h) or --energy-kwh with --power-w")
    duration_s = parse_duration_s(opts["duration"], "--duration")
    return Job(duration_s, start, deadline, opts["power_w"], **common), now


def _assign(items: tuple[str, ...], candidates: list[str], what: str) -> dict[str, list[str]]:
    """``LOC=FILE`` (or a bare FILE with one candidate) → {candidate: [files]}."""
    names = {c.upper(): c for c in candidates}
    out: dict[str, list[str]] = {}
    for item in items:
        key, sep, path = item.partition("=")
        if sep and key.strip().upper() in names:
            out.setdefault(names[key.strip().upper()], []).append(path)
        elif sep and not _looks_like_path(key):
            raise ConfigError(
                f"{what} {item}: {key!r} is not a candidate (candidates: {', '.join(candidates)})"
            )
        elif len(candidates) == 1:
            out.setdefault(candidates[0], []).append(item)
        else:
            raise ConfigError(f"{what} {item}: say which candidate it is for, as LOC=FILE")
    return out


def _looks_like_path(text: str) -> bool:
    return "/" in text or "\\" in text or "." in text


def _intensity(loc: str, is_zone: bool, files: list[str], opts: dict[str, Any], job_: Any) -> Any:
    """The forecast (or the history to forecast from) of one candidate."""
    from greenml.accounting import static
    from greenml.accounting.intensity import GridIntensity
    from greenml.accounting.traces import load_trace
    from greenml.schedule import sources

    if files:
        trace = sources.merge_traces([load_trace(f, location=loc) for f in files])
        if opts["trace_as_forecast"]:
            return sources.trace_forecast(loc, trace, job_.earliest_start_s, job_.deadline_s)
        return GridIntensity(trace.series, trace.provenance)
    if opts["trace_as_forecast"]:
        raise ConfigError(f"--trace-as-forecast: no --intensity-trace for {loc}")
    provider = opts["intensity_provider"] or "static"
    if is_zone and provider != "static":
        return sources.live_forecast(loc, provider, job_.earliest_start_s, job_.deadline_s)
    source = static.zone_source(loc) if is_zone else static.cloud_region_source(loc)
    return sources.yearly_forecast(loc, source)


def _price(files: list[str]) -> Any:
    from greenml.accounting.cost import PriceTrace

    if len(files) > 1:
        raise ConfigError(f"one --price-trace per candidate, got {', '.join(files)}")
    return PriceTrace.from_csv(files[0])


def _when(moment: Any) -> str:
    return str(moment.strftime("%Y-%m-%d %H:%M UTC"))


def _show(plan: Any, job_: Any) -> None:
    console = render.console()
    lines = _lines(plan, job_)
    for line in lines[:-1]:
        console.print(line, highlight=False, markup=False)
    if len(plan.options) > 1:
        console.print(_options(plan))
    for note in plan.notes:
        console.print(f"  note: {note}", highlight=False, markup=False)


def _lines(plan: Any, job_: Any) -> list[str]:
    """The plan as lines of text (the options table and notes follow)."""
    pieces = len(plan.chunks)
    total = sum(c.duration_s for c in plan.chunks)
    out = [
        f"plan: run {render.duration(total)} in {plan.location}, "
        f"{pieces} piece{'s' if pieces > 1 else ''} ({plan.objective})"
    ]
    for c in plan.chunks:
        out.append(
            f"  {_when(c.start)} → {_when(c.end)}  {render.duration(c.duration_s)}  {c.location}"
        )
    out.append(
        f"intensity: {plan.mean_intensity_g_per_kwh:.0f} g/kWh forecast vs "
        f"{plan.baseline_mean_intensity_g_per_kwh:.0f} g/kWh starting now here "
        f"({plan.baseline_location}, {_when(plan.baseline_start)})"
    )
    low, high = plan.saving_pct_interval
    interval = f" ({plan.interval_level * 100:g} % interval {low:.1f} to {high:.1f} %)"
    out.append(f"saving: {plan.saving_pct:.1f} %" + (interval if high > low else ""))
    if plan.expected_g is not None:
        out.append(
            f"emissions: {render.co2(plan.expected_g / 1000)} vs "
            f"{render.co2(plan.baseline_g / 1000)} (IT energy {plan.energy_kwh:.3g} kWh at "
            f"{job_.power_w:g} W × forecast intensity; no PUE)"
        )
    else:
        out.append("emissions: give --power-w for grams; the saving above is per kWh")
    out += _cost_lines(plan)
    out.append(f"forecast: {plan.forecast_source}")
    if plan.baseline_forecast_source != plan.forecast_source:
        out.append(f"baseline forecast: {plan.baseline_forecast_source}")
    out.append(f"uncertainty: {plan.uncertainty}")
    out.append("")
    return out


def _cost_lines(plan: Any) -> list[str]:
    if plan.mean_price_usd_per_mwh is None:
        return []
    change = f" ({plan.cost_change_pct:+.1f} %)" if plan.cost_change_pct is not None else ""
    if plan.expected_usd is not None:
        usd = f"{render.usd(plan.expected_usd)} vs {render.usd(plan.baseline_usd)}"
        return [f"cost: {usd}{change} — {plan.price_source}"]
    mwh = f"{plan.mean_price_usd_per_mwh:.1f} vs {plan.baseline_mean_price_usd_per_mwh:.1f}"
    return [f"price: {mwh} USD/MWh{change} — {plan.price_source}"]


def _options(plan: Any) -> Any:
    from rich.table import Table

    table = Table(show_edge=False, pad_edge=False, title="best per location", title_justify="left")
    for header in ("location", "start", "g/kWh", "USD/MWh"):
        table.add_column(header, justify="left" if header in ("location", "start") else "right")
    for o in plan.options:
        start = _when(o.start) if o.start else "over the cost cap"
        carbon, price = o.mean_intensity_g_per_kwh, o.mean_price_usd_per_mwh
        table.add_row(
            o.location,
            start,
            f"{carbon:.0f}" if carbon is not None else "-",
            f"{price:.1f}" if price is not None else "-",
        )
    return table

"""``greenml advise hardware``: rank GPUs and cloud instances for a workload."""

from __future__ import annotations

from typing import Any

import click

from greenml.cli import render
from greenml.cli.options import (
    db_option,
    json_option,
    location_options,
    price_option,
    pue_number,
    pue_option,
)
from greenml.errors import ConfigError
from greenml.hardware.gpu import PRECISIONS
from greenml.store.export import json_text

_EPILOG = """\b
Examples:
  greenml advise hardware --workload a774a9f9 --deadline +1h
  greenml advise hardware --flops 3e21 --precision bf16 --memory-gb 60 --deadline +14d \\
      --objective cost
"""


@click.command(epilog=_EPILOG)
@db_option
@click.option("--workload", "run_id", metavar="RUN_ID", help="A measured run to scale from.")
@click.option("--flops", type=float, help="The job's FLOPs (or the run's, overriding its tag).")
@click.option(
    "--precision",
    type=click.Choice(list(PRECISIONS), case_sensitive=False),
    help="Which peak the FLOPs run at  [default: the run's precision tag, or fp32]",
)
@click.option("--memory-gb", type=float, help="Device memory the job needs (default: measured).")
@click.option("--mfu", type=float, help="Model FLOPs utilization to assume, in (0, 1].")
@click.option(
    "--deadline", metavar="TIME", help="Latest finish: ISO-8601 or +DURATION (e.g. +2h, +3d)."
)
@click.option(
    "--objective",
    type=click.Choice(["energy", "cost", "carbon", "time"]),
    default="energy",
    show_default=True,
    help="What to minimize.",
)
@click.option(
    "--candidates",
    "which",
    type=click.Choice(["all", "gpus", "instances"]),
    default="all",
    show_default=True,
    help="GPUs (on-premises), priced cloud instances, or both.",
)
@click.option(
    "--instance-prices",
    type=click.Path(exists=True, dir_okay=False, path_type=str),
    metavar="CSV",
    help="Your own instance price table (read before the packaged one).",
)
@location_options
@pue_option
@price_option
@click.option("--top", type=int, default=10, show_default=True, help="Rows of the ranking shown.")
@json_option("Print the ranking as JSON on stdout.")
def hardware(
    db_url: str | None,
    run_id: str | None,
    flops: float | None,
    precision: str | None,
    memory_gb: float | None,
    mfu: float | None,
    deadline: str | None,
    objective: str,
    which: str,
    instance_prices: str | None,
    zone: str | None,
    region: str | None,
    country: str | None,
    ci: float | None,
    pue: str | None,
    price: float | None,
    top: int,
    as_json: bool,
) -> None:
    """Rank GPUs and cloud instances by time, energy, CO2eq or cost for a workload."""
    from greenml.advise.candidates import candidates
    from greenml.advise.grid import grid_for, run_grid
    from greenml.advise.hardware import advise_hardware
    from greenml.advise.workload import workload_from_flops

    if (run_id is None) == (flops is None) and run_id is None:
        raise ConfigError("give --workload RUN_ID or --flops N")
    deadline_s = _deadline_s(deadline)
    pue_value = pue_number(pue)
    measured_grid = None
    if run_id is not None:
        from greenml.advise.runs import load_workload
        from greenml.cli.runs import open_ingested

        with open_ingested(db_url) as store:
            work, record = load_workload(
                store, run_id, flops=flops, precision=precision, memory_gb=memory_gb
            )
        measured_grid = run_grid(record)
    else:
        assert flops is not None
        work = workload_from_flops(flops, precision, memory_gb)
    advice = advise_hardware(
        work,
        candidates(which, instance_prices),
        objective=objective,
        deadline_s=deadline_s,
        grid=grid_for(zone=zone, region=region, country=country, ci=ci),
        run_grid=measured_grid,
        pue=pue_value,
        electricity_usd_per_kwh=price,
        mfu=mfu,
    )
    if as_json:
        click.echo(json_text(advice.to_dict(), indent=2, ensure_ascii=False))
        return
    _print(advice, top)


def _deadline_s(text: str | None) -> float | None:
    """Seconds from now to ``--deadline`` (an instant, ``+2h``, or a bare ``2h``)."""
    if text is None:
        return None
    from datetime import datetime, timezone

    from greenml.schedule.timeparse import parse_duration_s, parse_instant

    now = datetime.now(timezone.utc)
    raw = text.strip()
    if raw[:1].isdigit() and "T" not in raw.upper() and "-" not in raw:
        return parse_duration_s(raw, "--deadline")
    seconds = (parse_instant(raw, "--deadline", now) - now).total_seconds()
    if seconds <= 0:
        raise ConfigError(f"--deadline {text!r} is already past")
    return seconds


def _print(advice: Any, top: int) -> None:
    from rich.table import Table

    out = render.console()
    w = advice.workload
    head = f"workload: {w.flops:.4g} FLOP at {w.precision}"
    if w.run_id:
        head += (
            f" · measured run {w.run_id} on {w.measured_on}: "
            f"{render.duration(w.measured_duration_s or 0)}, "
            f"{render.energy(w.measured_energy_j or 0)}"
        )
    out.print(head, highlight=False, markup=False)
    rel = advice.uncertainty_rel
    table = Table(
        title=f"ranked by {advice.objective} (±{rel:.0%} on time and energy)",
        title_justify="left", show_edge=False, pad_edge=False,
    )  # fmt: skip
    for name in ("#", "candidate", "GPUs", "time", "energy", "CO2eq", "cost", "cost basis"):
        table.add_column(name, overflow="fold", justify="right" if name == "#" else "left")
    for i, o in enumerate(advice.ranked[:top], 1):
        table.add_row(
            str(i), o.candidate.name, f"{o.candidate.count}× {o.candidate.spec.name}",
            _time(o.time_s), render.energy(o.energy_j),
            "unknown" if o.co2_g is None else render.co2(o.co2_g / 1000),
            "-" if o.cost_usd is None else render.usd(o.cost_usd), o.cost_basis,
        )  # fmt: skip
    out.print(table)
    if len(advice.ranked) > top:
        out.print(f"  … {len(advice.ranked) - top} more fitting (--top N or --json)")
    if advice.excluded:
        out.print("excluded:")
        for o in advice.excluded:
            out.print(f"  {o.candidate.name}: {o.excluded}", highlight=False, markup=False)
    out.print("assumptions:")
    for line in advice.assumptions:
        out.print(f"  {line}", highlight=False, markup=False)
    for note in advice.notes:
        out.print(f"  note: {note}", highlight=False, markup=False)
    out.print(f"decision: {advice.decision()}", highlight=False, markup=False)


def _time(seconds: float) -> str:
    """``0.42 ms``, ``12.3 s``, ``1:02:03``, ``3.2 d``."""
    if seconds < 1:
        return f"{seconds * 1000:.3g} ms"
    if seconds >= 3 * 86400:
        return f"{seconds / 86400:.3g} d"
    return render.duration(seconds)

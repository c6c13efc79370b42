"""``greenml plan replay``: the "Let's Wait Awhile" replay study on an intensity trace."""

from __future__ import annotations

from typing import Any

import click

from greenml.cli import render
from greenml.cli.options import intensity_trace_option, json_option, trace_renamed
from greenml.store.export import json_text


@click.command()
@intensity_trace_option(required=True)
@trace_renamed
@click.option(
    "--scenario",
    required=True,
    type=click.Choice(["nightly", "ml-jobs"]),
    help="nightly: a 30-min job daily at 01:00; ml-jobs: 3,387 training jobs on workdays.",
)
@click.option(
    "--window-hours", type=int, metavar="N", help="nightly: shift ±N h (default: each N in 0…8)."
)
@click.option(
    "--deadline",
    type=click.Choice(["next-workday", "semi-weekly"]),
    help="ml-jobs: how late a job may finish (default next-workday).",
)
@click.option(
    "--rules",
    type=click.Choice(["text", "wiesner2021"]),
    default="text",
    show_default=True,
    help="ml-jobs: the paper's text, or the published artifact's rules (wiesner2021).",
)
@click.option("--interruptible", is_flag=True, help="Jobs may run in any half hours of a window.")
@click.option(
    "--error",
    type=float,
    default=0.0,
    show_default=True,
    metavar="E",
    help="Forecast error: Gaussian noise with sd E × the series mean (e.g. 0.05).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of jobs and noise.")
@click.option(
    "--repetitions",
    type=int,
    default=10,
    show_default=True,
    help="Forecast draws averaged when --error > 0.",
)
@click.option(
    "--jobs", "job_count", type=int, default=3387, show_default=True, help="ml-jobs: jobs drawn."
)
@click.option(
    "--power-w", type=float, default=1000.0, show_default=True, help="Constant power of a job."
)
@click.option(
    "--tz",
    default="UTC",
    show_default=True,
    help="Time zone of 01:00, 09:00–17:00 and workdays (IANA name, e.g. Europe/Berlin).",
)
@click.option(
    "--scope",
    type=click.Choice(["lifecycle", "direct"]),
    default="lifecycle",
    show_default=True,
    help="Which intensity column of an Electricity Maps export (a plain file's scope).",
)
@json_option("Print the result as JSON on stdout.")
def replay(
    intensity_trace: str,
    scenario: str,
    window_hours: int | None,
    deadline: str | None,
    rules: str,
    interruptible: bool,
    error: float,
    seed: int,
    repetitions: int,
    job_count: int,
    power_w: float,
    tz: str,
    scope: str,
    as_json: bool,
) -> None:
    """Replay carbon-aware shifting ("Let's Wait Awhile") on an intensity trace."""
    from greenml.schedule.replay.run import replay as run_replay

    result = run_replay(
        intensity_trace, scenario, column=scope, tz=tz,  # type: ignore[arg-type]
        window_hours=window_hours, deadline=deadline, interruptible=interruptible,
        error=error, seed=seed, repetitions=repetitions, jobs=job_count, power_w=power_w,
        rules=rules,
    )  # fmt: skip
    data = result.to_dict()
    if as_json:
        print(json_text(data, ensure_ascii=False, indent=2))
        return
    console = render.console()
    console.print(_table(data))
    for line in _provenance(data):
        console.print(line, highlight=False, markup=False)


def _table(data: dict[str, Any]) -> Any:
    from rich.table import Table

    how = "interruptible" if data["interruptible"] else "non-interruptible"
    rule = f", deadline {data['deadline']}" if data["scenario"] == "ml-jobs" else ""
    if data["rules"] != "text":
        rule += f", {data['rules']} rules"
    title = f"replay {data['scenario']} ({how}{rule}) on {data['trace']}"
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    rows = data.get("windows") or [data]
    if data["scenario"] == "nightly":
        table.add_column("window")
    for header in ("jobs", "left out", "baseline", "shifted", "saving"):
        table.add_column(header, justify="right")
    for row in rows:
        cells = [
            str(row["jobs"]),
            str(row["jobs_left_out"]),
            render.co2(row["baseline_g"] / 1000),
            render.co2(row["shifted_g"] / 1000),
            _saving(row, data["repetitions"]),
        ]
        if data["scenario"] == "nightly":
            cells.insert(0, f"±{row['window_hours']} h")
        table.add_row(*cells)
    return table


def _saving(row: dict[str, Any], repetitions: int) -> str:
    text = f"{row['savings_pct']:.2f} %"
    low, high = row["savings_pct_range"]
    if repetitions > 1:
        text += f" [{low:.2f}–{high:.2f}]"
    return text


def _provenance(data: dict[str, Any]) -> list[str]:
    lines = [
        f"method: {data['method']}",
        f"trace: {data['source']}; {data['span']}; job times in {data['tz']}",
        f"jobs draw {data['power_w']:g} W each (grams scale with it; the saving does not)",
    ]
    if data["repetitions"] > 1:
        lines.append("saving in brackets: lowest–highest over the forecast draws")
    lines += [f"note: {note}" for note in data["notes"]]
    return lines

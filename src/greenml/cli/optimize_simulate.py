"""``greenml optimize simulate``: replay a recurring job from Zeus-format traces."""

from __future__ import annotations

from typing import Any

import click

from greenml.cli import render
from greenml.cli.options import json_option
from greenml.store.export import json_text

TABLE_MAX_RUNS = 30  # longer histories are summarised per batch size


@click.command()
@click.option(
    "--train-trace",
    required=True,
    type=click.Path(dir_okay=False),
    help="Zeus-format train trace (summary_train.csv).",
)
@click.option(
    "--power-trace",
    required=True,
    type=click.Path(dir_okay=False),
    help="Zeus-format power trace of one GPU (summary_power_<gpu>.csv).",
)
@click.option(
    "--workload", required=True, metavar="DATASET/NETWORK", help="e.g. cifar100/shufflenetv2"
)
@click.option("--eta", type=float, default=0.5, show_default=True, help="Energy weight in [0, 1].")
@click.option(
    "--beta", type=float, default=2.0, show_default=True, help="Early stop at beta x best cost."
)
@click.option(
    "--recurrences",
    type=click.IntRange(min=1),
    help="Runs of the job [default: 2 x batch sizes x power limits].",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the replay.")
@click.option("--default-batch-size", type=click.IntRange(min=1), help="Override the job's b0.")
@json_option("Print the simulation as JSON on stdout.")
def simulate(
    train_trace: str,
    power_trace: str,
    workload: str,
    eta: float,
    beta: float,
    recurrences: int | None,
    seed: int,
    default_batch_size: int | None,
    as_json: bool,
) -> None:
    """Replay a recurring job from Zeus-format traces.

    Each recurrence, the batch-size optimizer picks a size and the power limit is
    profiled just in time; prints the runs, the totals, the oracle (best fixed
    batch size and limit) and the baseline (default batch size at max power).
    """
    from greenml.optimize.simulate import simulate as run_simulation
    from greenml.optimize.zeus_trace import load_workload

    trace = load_workload(train_trace, power_trace, workload, default_batch_size)
    result = run_simulation(trace, eta=eta, beta=beta, recurrences=recurrences, seed=seed)
    if as_json:
        print(json_text(result.to_dict(), indent=2))
        return
    _render(result)


def _render(result: Any) -> None:
    console = render.console()
    console.print(
        f"{result.workload}: {result.recurrences} recurrences, eta {result.eta}, "
        f"beta {result.beta}, seed {result.seed}, default batch size "
        f"{result.default_batch_size}, P_max {result.max_power_w:g} W",
        highlight=False,
    )
    console.print(_history_table(result))
    console.print(_totals_table(result))
    ratio = result.second_half_ratio()
    console.print(
        f"second half of the recurrences: {ratio:.3f} x the oracle's expected cost per recurrence",
        highlight=False,
    )
    for skip in result.skipped:
        limit = "" if skip["power_limit"] is None else f" at {skip['power_limit']:g} W"
        console.print(
            f"  skipped: batch size {skip['batch_size']}{limit}: {skip['reason']}",
            highlight=False,
            markup=False,
        )
    console.print(f"  method: {result.to_dict()['method']}", highlight=False, markup=False)


def _history_table(result: Any) -> Any:
    from rich.table import Table

    if len(result.history) <= TABLE_MAX_RUNS:
        table = Table(title="runs", title_justify="left", show_edge=False, pad_edge=False)
        headers = ("rec", "try", "batch", "limit", "epochs", "energy", "time", "cost", "reached")
        for header in headers:
            table.add_column(header, justify="right")
        for r in result.history:
            table.add_row(
                str(r.recurrence),
                str(r.attempt),
                str(r.batch_size),
                f"{r.power_limit:g} W" + (" (profiled)" if r.profiled else ""),
                str(r.epochs),
                render.energy(r.energy_j),
                render.duration(r.time_s),
                f"{r.cost:.4g} J",
                "yes" if r.reached else "no (stopped)",
            )
        return table
    table = Table(
        title=f"{len(result.history)} runs, per batch size",
        title_justify="left",
        show_edge=False,
        pad_edge=False,
    )
    for header in ("batch", "limit", "runs", "failed", "first rec", "last rec", "mean cost"):
        table.add_column(header, justify="right")
    for size in sorted({r.batch_size for r in result.history}):
        runs = [r for r in result.history if r.batch_size == size]
        limits = ", ".join(f"{p:g} W" for p in sorted({r.power_limit for r in runs}))
        table.add_row(
            str(size),
            limits,
            str(len(runs)),
            str(sum(not r.reached for r in runs)),
            str(runs[0].recurrence),
            str(runs[-1].recurrence),
            f"{sum(r.cost for r in runs) / len(runs):.4g} J",
        )
    return table


def _totals_table(result: Any) -> Any:
    from rich.table import Table

    n = result.recurrences
    table = Table(title="totals", title_justify="left", show_edge=False, pad_edge=False)
    for header in ("", "batch", "limit", "energy", "time", "cost", "vs oracle"):
        table.add_column(header, justify="right")
    oracle_total = result.oracle.cost * n
    table.add_row(
        "greenml (replayed)",
        "-",
        "-",
        render.energy(result.total_energy_j),
        render.duration(result.total_time_s),
        f"{result.total_cost:.4g} J",
        f"{result.total_cost / oracle_total:.3f}",
    )
    fixed = (("oracle (expected)", result.oracle), ("baseline (expected)", result.baseline))
    for name, choice in fixed:
        table.add_row(
            name,
            str(choice.batch_size),
            f"{choice.power_limit:g} W",
            render.energy(choice.energy_j * n),
            render.duration(choice.time_s * n),
            f"{choice.cost * n:.4g} J",
            f"{choice.cost / result.oracle.cost:.3f}",
        )
    return table

"""``greenml diagnose RUN_ID``: waste, rightsizing and practice findings for a run;
``greenml diagnose --job ID``: stragglers across nodes, scaling and outlying nodes of a job."""

from __future__ import annotations

from typing import Any

import click

from greenml.cli import render
from greenml.cli.options import db_option, json_option, parse_share, renamed, server_read_option
from greenml.store.export import json_text


@click.command()
@db_option
@server_read_option
@click.argument("run_id", required=False)
@click.option("--job", "job_id", metavar="ID", help="Diagnose a job of many nodes, not a run.")
@click.option("--idle-below", default="15%", show_default=True, help="Idle under this activity.")
@click.option(
    "--underused-below", default="50%", show_default=True, help="Under-used under this activity."
)
@click.option("--runs-per-year", type=float, help="How often the job runs (per-year figures).")
@click.option(
    "--candidate-location",
    "candidates",
    multiple=True,
    metavar="LOC",
    help="A grid zone, cloud region or country the job could run in (repeatable).",
)
@renamed("--candidate", "--candidate-location", "candidates", multiple=True, metavar="LOC")
@json_option("Print the diagnosis as JSON on stdout.")
def diagnose(
    db_url: str | None,
    server_url: str | None,
    run_id: str | None,
    job_id: str | None,
    idle_below: str,
    underused_below: str,
    runs_per_year: float | None,
    candidates: tuple[str, ...],
    as_json: bool,
) -> None:
    """Find the energy a run (or a job of many nodes) wastes, and what fixing it is worth."""
    from greenml.cli.runs import open_ingested
    from greenml.diagnose.run import diagnose_run
    from greenml.errors import ConfigError

    if (run_id is None) == (job_id is None):
        raise ConfigError("give a RUN_ID or --job ID (one of them)")
    if job_id is not None:
        _diagnose_job(db_url, server_url, job_id, as_json)
        return
    if server_url is not None:
        raise ConfigError("diagnose RUN_ID reads the run store: --server diagnoses jobs "
                          "(--job ID); a run's diagnosis is on the dashboard's run "
                          "page")  # fmt: skip

    idle = parse_share(idle_below, "--idle-below")
    under = parse_share(underused_below, "--underused-below")
    with open_ingested(db_url) as store:
        result = diagnose_run(
            store,
            str(run_id),
            idle_below=idle,
            underused_below=under,
            runs_per_year=runs_per_year,
            candidates=list(candidates),
        )
    if as_json:
        print(json_text(result.to_dict(), ensure_ascii=False, indent=2))
        return
    console = render.console()
    console.print(
        f"run {result.run_id}: {result.analysed.upper()} energy "
        f"{render.energy(result.energy_j)}{_spread(result)} ({result.energy_method}) "
        f"over {render.duration(result.duration_s)}",
        highlight=False,
    )
    if not result.findings:
        console.print("no findings: nothing wasted above the thresholds", highlight=False)
    else:
        console.print(_table(result))
    for note in result.notes:
        console.print(f"  note: {note}", highlight=False, markup=False)


def _diagnose_job(db_url: str | None, server_url: str | None, job_id: str, as_json: bool) -> None:
    from greenml.cli.read_from import read_server

    server = read_server(db_url, server_url)
    if server is not None:
        from greenml.jobs.remote import server_job_diagnosis

        result = server_job_diagnosis(server, job_id)
    else:
        from greenml.cli.runs import open_ingested
        from greenml.diagnose.job import diagnose_job

        with open_ingested(db_url) as store:
            result = diagnose_job(store, job_id).to_dict()
    if as_json:
        print(json_text(result, ensure_ascii=False, indent=2))
        return
    console = render.console()
    energy = result["energy"]
    console.print(
        f"job {render.safe(job_id)}: {result['nodes']} node run(s), "
        f"{render.energy(energy['total_j'])} {render.percent(energy['uncertainty_rel'])}",
        highlight=False, markup=False,
    )  # fmt: skip
    for key in ("stragglers", "scaling"):
        if result[key] is not None:
            console.print(f"{key}: {result[key]['text']}", highlight=False, markup=False)
    for outlier in result["outliers"]:
        console.print(f"out of line: {outlier['text']}", highlight=False, markup=False)
    for line in result["problems"]:
        console.print(f"  problem: {line}", highlight=False, markup=False)
    for note in result["notes"]:
        console.print(f"  note: {note}", highlight=False, markup=False)


def _table(result: Any) -> Any:
    from rich.table import Table

    table = Table(show_edge=False, pad_edge=False, show_lines=True)
    for header in ("kind", "severity", "evidence", "per run", "per year", "recommendation"):
        table.add_column(header, overflow="fold")
    for f in result.findings:
        per_run = _stake(f.energy_at_stake_j, f.usd_at_stake)
        if f.co2_g_at_stake is not None:
            per_run = f"{f.co2_g_at_stake / 1000:.3g} kg CO2eq"
        per_year = (
            _stake(f.energy_per_year_j, f.usd_per_year) if f.energy_per_year_j is not None else "-"
        )
        table.add_row(
            f.kind, f.severity, f"{f.title}\n{f.evidence}", per_run, per_year, f.recommendation
        )
    return table


def _stake(energy_j: float, usd: float | None) -> str:
    text = render.energy(energy_j)
    return text + (f"\n${usd:,.2f}" if usd is not None else "")


def _spread(result: Any) -> str:
    rel = result.energy_uncertainty_rel
    return f" {render.percent(rel)}" if isinstance(rel, (int, float)) else ""

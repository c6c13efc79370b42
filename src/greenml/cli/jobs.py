"""``greenml jobs list | show``: distributed jobs, each one job from many nodes' runs."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import click

from greenml.cli import render
from greenml.cli.options import db_option, json_option, server_read_option
from greenml.store.export import json_text

if TYPE_CHECKING:
    from greenml.record.run_record import RunRecord
    from greenml.run.server_settings import ServerSettings


@click.group()
def jobs() -> None:
    """Jobs measured on many nodes: each node's run, added up.

    Read from the team server when one is configured (--server, $GREENML_SERVER or the
    config file), else from the run store; --db always reads the store.
    """


def _server(db_url: str | None, server_url: str | None) -> ServerSettings | None:
    """The team server to read from, or None for the store (see :mod:`greenml.cli.read_from`)."""
    from greenml.cli.read_from import read_server

    return read_server(db_url, server_url)


@jobs.command("list")
@db_option
@server_read_option
@click.option("-n", "--limit", type=click.IntRange(1, 10_000), default=20, show_default=True)
@json_option("Print JSON lines on stdout instead of a table.")
def list_jobs(db_url: str | None, server_url: str | None, limit: int, as_json: bool) -> None:
    """The newest jobs, one line each (nodes seen of expected, energy, problems)."""
    server = _server(db_url, server_url)
    if server is not None:
        from greenml.jobs.remote import server_jobs

        rows = server_jobs(server, limit)
    else:
        from greenml.cli.runs import open_ingested
        from greenml.jobs.summary import summarize_job
        from greenml.store.jobs import all_jobs

        with open_ingested(db_url) as store:
            found = list(all_jobs(store).items())[:limit]
        rows = [summarize_job(job_id, records).to_listing() for job_id, records in found]
    if as_json:
        for row in rows:
            print(json_text(row, ensure_ascii=False))
        return
    if not rows:
        print("no jobs stored yet: try `greenml run --job ID -- COMMAND` on each node")
        return
    from rich.table import Table

    table = Table(show_edge=False, pad_edge=False)
    for header in ("job", "name", "started (UTC)", "nodes", "energy", "problems"):
        table.add_column(header, overflow="fold")
    for row in rows:
        expected = row["expected_nodes"]
        table.add_row(
            render.safe(row["job_id"]),
            render.safe(row["job_name"] or ""),
            (row["span"]["started_at"] or "-")[:19].replace("T", " "),
            f"{row['seen_nodes']}/{expected if expected is not None else '?'}",
            _energy_text(row["energy"]),
            str(len(row["problems"])) if row["problems"] else "",
        )
    render.console().print(table)


@jobs.command("show")
@db_option
@server_read_option
@click.argument("job_id")
@click.option(
    "--sacct/--no-sacct",
    default=None,
    help="Compare with Slurm's own energy accounting (sacct ConsumedEnergyRaw); "
    "default: for Slurm jobs when sacct is on PATH.",
)
@click.option(
    "--kepler",
    "kepler_url",
    metavar="URL",
    help="Prometheus holding Kepler's metrics: each pod's CPU and DRAM energy beside greenml's.",
)
@json_option("Print the job as JSON on stdout.")
def show(
    db_url: str | None, server_url: str | None, job_id: str, sacct: bool | None,
    kepler_url: str | None, as_json: bool,
) -> None:  # fmt: skip
    """One job: energy per node and device, carbon, cost, span, nodes missing."""
    server = _server(db_url, server_url)
    if server is not None:
        from greenml.jobs.remote import server_job

        summary = server_job(server, job_id)
    else:
        from greenml.jobs.summary import summarize_job

        summary = summarize_job(job_id, _job_records(db_url, job_id))
    if sacct or (sacct is None and "slurm" in (*summary.sources, summary.scheduler)):
        from greenml.jobs.sacct import compare_sacct

        compared = compare_sacct(summary, required=bool(sacct))
        summary.second_sources.append(compared)
        if compared.get("cancelled"):
            summary = replace(summary, state="CANCELLED")
            summary.problems.append(f"the job was cancelled (sacct State of "
                                    f"{', '.join(compared['cancelled'])}: CANCELLED)")  # fmt: skip
    if kepler_url:
        from greenml.jobs.kepler import compare_kepler

        summary.second_sources.append(compare_kepler(summary, kepler_url))
    data = summary.to_dict()
    if as_json:
        print(json_text(data, ensure_ascii=False, indent=2))
        return
    _print_job(data)


def _job_records(db_url: str | None, job_id: str) -> list[RunRecord]:
    """The job's runs: through the light SQLite reader when every stored run is finished."""
    from greenml.cli.runs import light_reader, open_ingested
    from greenml.store.jobs import job_runs

    reader = light_reader(db_url)
    if reader is not None:
        with reader:
            if not reader.has_unfinished():
                return job_runs(reader, job_id)
    with open_ingested(db_url) as store:
        return job_runs(store, job_id)


def _print_job(data: dict[str, Any]) -> None:
    from rich.table import Table

    console = render.console()
    expected = data["expected_nodes"]
    span = data["span"]
    wall = f" over {render.duration(span['wall_s'])}" if span.get("wall_s") is not None else ""
    state = f" [{data['state']}]" if data.get("state") else ""
    console.print(
        f"job {render.safe(data['job_id'])} ({', '.join(data['sources'])}){state}: "
        f"{data['seen_nodes']} node(s) of {expected if expected is not None else 'unknown'} "
        f"expected, {_energy_text(data['energy'])}{wall}",
        highlight=False, markup=False,
    )  # fmt: skip
    table = Table(show_edge=False, pad_edge=False)
    for header in ("step", "rank", "node", "run", "status", "energy", "devices", "carbon",
                   "cost"):  # fmt: skip
        table.add_column(header, overflow="fold")
    for n in data["nodes"]:
        energy = f"{render.energy(n['energy_j'])} {render.percent(n['uncertainty_rel'])}"
        devices = ", ".join(f"{k} {render.energy(d['energy_j'])}" for k, d in n["devices"].items())
        carbon = "-" if n["carbon_kg"] is None else render.co2(n["carbon_kg"])
        if n["carbon_location"]:
            carbon += f" ({n['carbon_location']})"
        table.add_row(
            _step_text(n),
            "-" if n["node_rank"] is None else str(n["node_rank"]),
            render.safe(n["node"] or "?"), n["run_id"], n["status"],
            energy if n["counted"] else f"{energy} (not counted: "
            f"{n.get('not_counted_why') or 'see the problems'})", devices, carbon,
            "-" if n["cost_usd"] is None else render.usd(n["cost_usd"]),
        )  # fmt: skip
    console.print(table)
    for key, unit in (("carbon", "kg"), ("cost", "usd")):
        block = data[key]
        value = block[unit]
        shown = "unknown" if value is None else (render.co2(value) if unit == "kg"
                                                 else render.usd(value))  # fmt: skip
        if value is not None and block.get("uncertainty_rel") is not None:
            shown += f" {render.percent(block['uncertainty_rel'])}"
        status = "" if block["status"] == "ok" else f" ({block['status']}: no figure for " \
            f"{', '.join(block['nodes_without'])})"  # fmt: skip
        console.print(f"{key}: {shown}{status}", highlight=False, markup=False)
    for source in data["second_sources"]:
        console.print(f"{source['source']}: {source['text']}", highlight=False, markup=False)
    for problem in data["problems"]:
        console.print(f"  problem: {problem}", highlight=False, markup=False)


def _step_text(n: dict[str, Any]) -> str:
    """The step column: the step id, ``allocation`` (the prolog's run), the array task."""
    step = n.get("step_id") or ("allocation" if n.get("scope") == "allocation" else "-")
    task = n.get("array_task_id")
    return f"{step} (task {task})" if task is not None else step


def _energy_text(energy: dict[str, Any]) -> str:
    if energy.get("status") == "none counted":
        return "no energy figure (none of its runs is counted: see the problems)"
    return f"{render.energy(energy['total_j'])} {render.percent(energy['uncertainty_rel'])}"

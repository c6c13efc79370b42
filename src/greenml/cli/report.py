"""``greenml report``: a report on stored runs, as Markdown, HTML or JSON."""

from __future__ import annotations

import contextlib
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from greenml.cli import render
from greenml.cli.options import db_option, output_option, renamed, server_read_option
from greenml.errors import ConfigError
from greenml.report.kinds import KINDS

if TYPE_CHECKING:
    from greenml.report.model import Report

_EPILOG = """\b
Examples:
  greenml report 5b1463e4                       Carbon Impact Statement (Markdown)
  greenml report --tag search=lr --format html -o search.html
  greenml report --tag model=llm-7b --kind euaiact --model llm-7b --provider-name ACME
  greenml report 5b1463e4 --kind sci --per "1000 inferences" --units 250000
  greenml report --job 4242                     every node run of a distributed job
"""


@click.command(epilog=_EPILOG)
@db_option
@server_read_option
@click.argument("run_ids", nargs=-1, metavar="[RUN_ID]...")
@click.option(
    "--tag",
    "tags",
    multiple=True,
    metavar="KEY=VALUE",
    help="All runs with this tag (e.g. every trial of a search).",
)
@click.option(
    "--job",
    "job_id",
    metavar="ID",
    help="Every node run of a distributed job (see greenml jobs show).",
)
@click.option(
    "--kind",
    type=click.Choice(list(KINDS)),
    default="statement",
    show_default=True,
    help="What to report.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["md", "html", "json"]), default="md", show_default=True
)
@output_option()
@click.option("--flops", type=float, help="euaiact: training FLOPs of all runs.")
@click.option("--model", help="euaiact: the model's name.")
@click.option("--provider-name", metavar="NAME", help="euaiact: the provider's name (a company).")
@renamed("--provider", "--provider-name", "provider_name")
@click.option(
    "--estimated-mwh",
    type=float,
    help="euaiact: energy of parts not measured, in MWh (labelled estimated).",
)
@click.option("--per", help="sci: the functional unit, e.g. 'token', '1000 inferences'.")
@click.option(
    "--units",
    metavar="COUNT",
    help="sci: a count of items: how many --per units the runs processed "
    "(e.g. --per token --units 2e9).",
)
@click.option(
    "--embodied-kg", type=float, help="sci: embodied kg CO2eq per GPU (or per machine without GPU)."
)
@click.option("--lifetime-years", type=float, help="sci: hardware lifespan  [default: 4]")
@click.option(
    "--baseline",
    "baseline",
    multiple=True,
    metavar="RUN_ID",
    help="savings: a baseline run among the runs given (repeatable); the others are optimized.",
)
@click.option("--runs-per-year", type=float, help="savings: how often the job runs a year.")
@click.option("--effort-hours", type=float, help="savings: engineering hours the change took.")
@click.option("--hourly-rate", "hourly_rate_usd", type=float, help="savings: USD per hour.")
@click.option(
    "--unit", metavar="UNIT", help="savings: the unit of work to compare (when runs tag several)."
)
@click.option("--task-class", help="label: the task class, e.g. text_classification.")
@click.option("--queries", type=float, help="label: queries the runs served.")
@click.option(
    "-O",
    "--option",
    "text_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="Another option of the kind (e.g. -O task_class=object_detection); repeat for lists.",
)
def report(
    db_url: str | None,
    server_url: str | None,
    run_ids: tuple[str, ...],
    tags: tuple[str, ...],
    job_id: str | None,
    kind: str,
    fmt: str,
    output: Path | None,
    flops: float | None,
    model: str | None,
    provider_name: str | None,
    estimated_mwh: float | None,
    per: str | None,
    units: str | None,
    embodied_kg: float | None,
    lifetime_years: float | None,
    baseline: tuple[str, ...],
    runs_per_year: float | None,
    effort_hours: float | None,
    hourly_rate_usd: float | None,
    unit: str | None,
    task_class: str | None,
    queries: float | None,
    text_options: tuple[str, ...],
) -> None:
    """A report on stored runs: impact statement, EU AI Act documentation, SCI score,
    inference energy label, savings of an optimization."""
    from greenml.cli.runs import open_ingested
    from greenml.report.kinds import build_report
    from greenml.report.runset import load_runs
    from greenml.run.runner import parse_tags

    options = {
        "flops": flops,
        "model": model,
        "provider": provider_name,
        "estimated_mwh": estimated_mwh,
        "per": per,
        "units": _number("--units", units),
        "embodied_kg": embodied_kg,
        "lifetime_years": lifetime_years,
        "baseline": list(baseline) or None,
        "runs_per_year": runs_per_year,
        "effort_hours": effort_hours,
        "hourly_rate_usd": hourly_rate_usd,
        "unit": unit,
        "task_class": task_class,
        "queries": queries,
    }
    extra: dict[str, list[str]] = {}
    for pair in text_options:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"-O {pair!r} is not of the form key=value")
        extra.setdefault(key.strip().replace("-", "_"), []).append(value)
    tag = parse_tags(tags) or None
    from greenml.cli.read_from import read_server

    server = read_server(db_url, server_url)
    if server is not None:
        if tag:
            raise ConfigError("--tag reads the run store: with --server, name RUN_IDs or --job")
        with _from_server(server, run_ids, job_id) as (store, ids):
            runs = load_runs(store, ids, None)
            document = build_report(kind, runs, extra, **options)
    else:
        with open_ingested(db_url) as store:
            job_runs = _job_runs(store, job_id) if job_id is not None else []
            runs = load_runs(store, (*run_ids, *job_runs), tag)
            document = build_report(kind, runs, extra, **options)
    text = _render(document, fmt)
    render.write_output(text if text.endswith("\n") else text + "\n", output)


@contextlib.contextmanager
def _from_server(
    server: Any, run_ids: tuple[str, ...], job_id: str | None
) -> Iterator[tuple[Any, list[str]]]:
    """A throw-away store holding the runs read from the team server (a job's counted runs)."""
    from greenml.jobs.remote import server_job, server_run
    from greenml.store import open_store
    from greenml.store.access import ensure_project
    from greenml.store.transfer import import_run

    ids = list(run_ids)
    if job_id is not None:
        summary = server_job(server, job_id)
        for problem in summary.problems:
            print(f"greenml: job {job_id}: {problem}", file=sys.stderr)
        ids += [n.run_id for n in summary.nodes if n.counted]
    with (
        tempfile.TemporaryDirectory(prefix="greenml-report-") as folder,
        open_store(f"sqlite:///{Path(folder) / 'runs.db'}") as store,
    ):
        project = ensure_project(store, "server")  # uploads belong to a project
        for run_id in dict.fromkeys(ids):
            import_run(store, server_run(server, run_id), project)
        yield store, ids


def _job_runs(store: Any, job_id: str) -> list[str]:
    """The run ids a job counts (one run per node and step, as ``jobs show`` says)."""
    from greenml.jobs.summary import summarize_job
    from greenml.store.jobs import job_runs

    summary = summarize_job(job_id, job_runs(store, job_id))
    for problem in summary.problems:
        print(f"greenml: job {job_id}: {problem}", file=sys.stderr)
    return [n.run_id for n in summary.nodes if n.counted]


def _render(document: Report, fmt: str) -> str:
    if fmt == "json":
        from greenml.report.markdown import render_json

        return render_json(document)
    if fmt == "html":
        try:
            from greenml.report.html import render_html
        except ImportError as exc:
            raise ConfigError(f"HTML output is not available: {exc}") from None
        html: str = render_html(document)
        return html
    from greenml.report.markdown import render_markdown

    return render_markdown(document)


def _number(flag: str, text: str | None) -> float | None:
    """``250000``, ``2.5e5``, ``250_000`` or ``250,000`` → float; ConfigError otherwise."""
    if text is None:
        return None
    try:
        return float(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise ConfigError(f"{flag} must be a number, got {text!r}") from None

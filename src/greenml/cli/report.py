"""``greenml report KIND``: a report on stored runs, as Markdown, HTML or JSON.

One subcommand per kind, each with its own typed options (``statement``, ``euaiact``,
``sci``, ``label``, ``savings``, ``audit``); the runs and the output are chosen the
same way for all.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from greenml.cli import render
from greenml.cli.options import (
    db_option,
    output_option,
    renamed,
    server_read_option,
    yearly_rate,
)
from greenml.errors import ConfigError

if TYPE_CHECKING:
    from greenml.report.model import Report

_EPILOG = """\b
Examples:
  greenml report statement 5b1463e4             Carbon Impact Statement (Markdown)
  greenml report statement --tag search=lr --format html -o search.html
  greenml report euaiact --tag model=llm-7b --model llm-7b --provider-name ACME
  greenml report sci 5b1463e4 --per "1000 inferences" --units 250000
  greenml report statement --job 4242          every node run of a distributed job
  greenml report audit --project llm            the green-practice checklist

\b
`greenml report RUN_ID...` is the statement; `--kind KIND` and `-O KEY=VALUE` of
earlier releases still work for one release.
"""


class _ReportGroup(click.Group):
    """``greenml report KIND …``; ``greenml report [--kind KIND] …`` of earlier releases
    (no kind, or ``--kind``) is read as the kind's subcommand."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = _legacy_kind_first(args)
        return super().parse_args(ctx, args)


def _legacy_kind_first(args: list[str]) -> list[str]:
    """``[RUN, --kind, sci, …]`` → ``[sci, RUN, …]``; without ``--kind``: the statement."""
    kind, rest = "statement", []
    items = iter(args)
    for arg in items:
        if arg == "--":
            rest += [arg, *items]
            break
        if arg == "--kind":
            kind = next(items, "")
        elif arg.startswith("--kind="):
            kind = arg.partition("=")[2]
        else:
            rest.append(arg)
    return [kind, *rest]


@click.group(cls=_ReportGroup, epilog=_EPILOG)
def report() -> None:
    """A report on stored runs: impact statement, EU AI Act documentation, SCI score,
    inference energy label, savings of an optimization, green-practice audit."""


F = TypeVar("F", bound=Callable[..., Any])


def _runs_options(f: F) -> F:
    """The runs a report is on, and where it is written: the same for every kind."""
    for decorate in reversed([
        db_option,
        server_read_option,
        click.argument("run_ids", nargs=-1, metavar="[RUN_ID]..."),
        click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE",
                     help="All runs with this tag (e.g. every trial of a search)."),
        click.option("--job", "job_id", metavar="ID",
                     help="Every node run of a distributed job (see greenml jobs show)."),
        click.option("--format", "fmt", type=click.Choice(["md", "html", "json"]), default="md",
                     show_default=True),
        output_option(),
        click.option("-O", "--option", "text_options", multiple=True, metavar="KEY=VALUE",
                     hidden=True, help="An option of the kind as text (earlier releases)."),
    ]):  # fmt: skip
        f = decorate(f)
    return f


@report.command("statement")
@_runs_options
def statement(**given: Any) -> None:
    """Carbon Impact Statement: energy, CO2eq, cost, equivalences and the method."""
    _report("statement", given)


@report.command("euaiact")
@_runs_options
@click.option("--model", help="The model's name.")
@click.option("--provider-name", metavar="NAME", help="The provider's name (a company).")
@renamed("--provider", "--provider-name", "provider_name")
@click.option("--flops", type=float, help="Training FLOPs of all runs.")
@click.option("--estimated-mwh", type=float,
              help="Energy of parts not measured, in MWh (labelled estimated).")  # fmt: skip
def euaiact(provider_name: str | None, **given: Any) -> None:
    """EU AI Act energy documentation (Annex XI 2(d), Annex XII) of a model's training."""
    _report("euaiact", {**given, "provider": provider_name})


@report.command("sci")
@_runs_options
@click.option("--per", help="The functional unit, e.g. 'token', '1000 inferences', 'workflow'.")
@click.option("--units", metavar="COUNT", callback=lambda _c, p, v: _number(f"--{p.name}", v),
              help="How many --per units the runs processed (e.g. --per token --units 2e9).")
@click.option("--embodied-kg", type=float,
              help="Embodied kg CO2eq per GPU (or per machine without GPU).")
@click.option("--lifetime-years", type=float, help="Hardware lifespan  [default: 4]")
def sci(**given: Any) -> None:  # fmt: skip
    """Software Carbon Intensity (ISO/IEC 21031) per functional unit."""
    _report("sci", given)


@report.command("label")
@_runs_options
@click.option("--task-class", help="The task class, e.g. text_classification (required).")
@click.option("--queries", type=float, help="Queries the runs served.")
@click.option("--energy-scope", type=click.Choice(["gpu", "total"]),
              help="The energy the label rates  [default: gpu]")
@click.option("--reference", type=click.Path(dir_okay=False, path_type=Path),
              help="A reference table of the task class (CSV) instead of the packaged one.")
def label(**given: Any) -> None:  # fmt: skip
    """Inference energy label (A–E) against the task class's reference."""
    _report("label", given)


@report.command("savings")
@_runs_options
@click.option("--baseline", multiple=True, metavar="RUN_ID",
              help="A baseline run among the runs given (repeatable; required).")
@click.option("--optimized", multiple=True, metavar="RUN_ID",
              help="An optimized run (repeatable; default: the runs that are not baselines).")
@click.option("--runs-per-year", type=float, help="How often the job runs a year.")
@click.option("--work-per-run", type=float, help="Units of work a run does.")
@click.option("--effort-hours", type=float, help="Engineering hours the change took.")
@click.option("--hourly-rate", "hourly_rate_usd", type=float, help="USD per hour.")
@click.option("--unit", metavar="UNIT", help="The unit of work to compare (when runs tag several).")
def savings(baseline: tuple[str, ...], optimized: tuple[str, ...], **given: Any) -> None:
    """Savings of an optimization: baseline runs against optimized ones, per year."""  # fmt: skip
    _report("savings", {**given, "baseline": list(baseline) or None,
                        "optimized": list(optimized) or None})  # fmt: skip


@report.command("savings-plan")
@_runs_options
@click.option("--deadline-hours", type=float,
              help="How long a run may wait for greener hours.  [default: 12]")
@click.option("--price-escalation", metavar="PERCENT",
              callback=lambda _c, _p, v: None if v is None else yearly_rate(v),
              help="Yearly change of prices, for the money over --years years (e.g. 3%).")
@click.option("--years", type=float, help="The horizon of the savings.  [default: 3]")
def savings_plan(**given: Any) -> None:
    """Every saving across the runs, ranked, with the verified ones apart (greenml savings plan)."""
    _report("savings-plan", given)


@report.command("audit")
@_runs_options
@click.option("--project", metavar="NAME",
              help="Without runs given: runs tagged project=NAME, or named NAME.")
@click.option("--limit", type=int, default=500, show_default=True,
              help="Without runs given: the newest runs looked at.")
def audit(project: str | None, limit: int, **given: Any) -> None:  # fmt: skip
    """The green-practice checklist (4Ms): passed / failed / unknown, with evidence."""
    if given["run_ids"] or given["tags"] or given["job_id"]:
        _report("audit", given)
        return
    from greenml.cli.audit import audit_store

    text = audit_store(given["db_url"], project, limit, given["fmt"])
    render.write_output(text, given["output"])


def _report(kind: str, given: dict[str, Any]) -> None:
    """Read the runs, build the report of ``kind``, write it."""
    from greenml.cli.read_from import read_server
    from greenml.cli.runs import open_ingested
    from greenml.report.kinds import build_report
    from greenml.report.runset import load_runs
    from greenml.run.runner import parse_tags

    db_url, server_url = given.pop("db_url"), given.pop("server_url")
    run_ids, job_id = given.pop("run_ids"), given.pop("job_id")
    tag = parse_tags(given.pop("tags")) or None
    fmt, output = given.pop("fmt"), given.pop("output")
    extra: dict[str, list[str]] = {}
    for pair in given.pop("text_options"):
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"-O {pair!r} is not of the form key=value")
        extra.setdefault(key.strip().replace("-", "_"), []).append(value)
    server = read_server(db_url, server_url)
    if server is not None:
        if tag:
            raise ConfigError("--tag reads the run store: with --server, name RUN_IDs or --job")
        with _from_server(server, run_ids, job_id) as (store, ids):
            runs = load_runs(store, ids, None)
            document = build_report(kind, runs, extra, **given)
    else:
        with open_ingested(db_url) as store:
            job_runs = _job_runs(store, job_id) if job_id is not None else []
            runs = load_runs(store, (*run_ids, *job_runs), tag)
            document = build_report(kind, runs, extra, **given)
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

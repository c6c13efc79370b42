"""``greenml audit``: the green-practice checklist against the run store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from greenml.cli import render
from greenml.cli.options import db_option, output_option
from greenml.errors import ConfigError

_EPILOG = """\b
Examples:
  greenml audit                              every run in the store (newest 500)
  greenml audit --project llm --format html -o audit.html
"""


@click.command(epilog=_EPILOG)
@db_option
@click.option(
    "--project",
    metavar="NAME",
    help="Runs tagged project=NAME, or named NAME (default: all runs).",
)
@click.option("--limit", type=int, default=500, show_default=True, help="Newest runs looked at.")
@click.option(
    "--format", "fmt", type=click.Choice(["md", "html", "json"]), default="md", show_default=True
)
@output_option()
def audit(
    db_url: str | None, project: str | None, limit: int, fmt: str, output: Path | None
) -> None:
    """Check the project's green practices (4Ms): passed / failed / unknown, with evidence."""
    from greenml.cli.runs import open_ingested
    from greenml.report.audit import audit_document, run_audit
    from greenml.report.runset import RunSet

    with open_ingested(db_url) as store:
        rows = store.list_runs(limit=limit, tag={"project": project} if project else None)
        if project and not rows:
            rows = store.list_runs(limit=limit, name=project)
        if project and not rows:
            raise ConfigError(f"no run is tagged project={project} or named {project}")
        runs = RunSet([store.get_record(r["id"]) for r in rows], store)
        scope = f"project {project}" if project else f"the newest {limit} runs"
        document = audit_document(run_audit(runs, scope))
    text = render_document(document, fmt)
    render.write_output(text, output)


def render_document(document: Any, fmt: str) -> str:
    """A report document as Markdown, HTML or JSON text, ending with a newline."""
    if fmt == "json":
        from greenml.report.markdown import render_json

        text: str = render_json(document)
    elif fmt == "html":
        from greenml.report.html import render_html

        text = render_html(document)
    else:
        from greenml.report.markdown import render_markdown

        text = render_markdown(document)
    return text if text.endswith("\n") else text + "\n"

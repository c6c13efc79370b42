"""The green-practice checklist against the run store (``greenml report audit --project``),
and a report document rendered as text (for the report family's commands)."""

from __future__ import annotations

from typing import Any

from greenml.errors import ConfigError


def audit_store(db_url: str | None, project: str | None, limit: int, fmt: str) -> str:
    """The audit of a project's runs (or of the newest ``limit``), rendered as ``fmt``."""
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
    return render_document(document, fmt)


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

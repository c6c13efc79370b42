"""Reports of a project's runs, built by :mod:`greenml.report` exactly as the CLI builds them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from greenml.errors import ConfigError, RunNotFound
from greenml.store import query

if TYPE_CHECKING:
    from greenml.report.model import Report
    from greenml.server.auth import Scope
    from greenml.store.repository import Store

FORMATS = {"md": "text/markdown; charset=utf-8", "html": "text/html; charset=utf-8",
           "json": "application/json"}  # fmt: skip
MAX_REPORT_RUNS = 1000


def build(
    store: Store, where: Scope, kind: str, run_ids: Sequence[str], tags: Sequence[str],
    options: Sequence[str],
) -> Report:  # fmt: skip
    """Build ``kind`` over the named runs and the runs with ``tags``, all of the scope's project.

    Raises:
        ConfigError: No runs named, bad options (as the CLI says them).
        RunNotFound: A run that is not in the project.
    """
    from greenml.report.kinds import build_report
    from greenml.report.runset import RunSet

    ids = list(dict.fromkeys(run_ids))
    if tags:
        pairs = dict(_pair(t, "tag") for t in tags)
        found, _ = query.find_runs(
            store, query.RunFilter(project_id=where.project_id, tags=pairs),
            limit=min(MAX_REPORT_RUNS, query.MAX_PAGE),
        )  # fmt: skip
        if not found:
            raise ConfigError("no runs of the project carry " + ", ".join(tags))
        ids += [r["id"] for r in found if r["id"] not in ids]
    if not ids:
        raise ConfigError("no runs given: pass run=ID or tag=KEY=VALUE")
    records = []
    for run_id in ids:
        if query.project_of_run(store, run_id) != where.project_id:
            raise RunNotFound(f"no run {run_id!r} in project {where.project!r}")
        records.append(store.get_record(run_id, exact=True))
    text_options: dict[str, list[str]] = {}
    for item in options:
        key, value = _pair(item, "option")
        text_options.setdefault(key, []).append(value)
    served_options(kind, text_options)
    return build_report(kind, RunSet(records, store, project_id=where.project_id), text_options)


MAX_OPTION_CHARS = 200


def served_options(kind: str, text_options: dict[str, list[str]]) -> None:
    """Refuse the options a server must not take: any that names a file, any overlong value.

    The server builds reports from its database alone: an option typed as a path (the
    label report's ``reference``) would make it open files of the server's machine on a
    caller's word, so it is refused by its type, not by its name.

    Raises:
        ConfigError: An option typed as a path, or a value over 200 characters.
    """
    import inspect

    from greenml.report.kinds import load_kind

    params = inspect.signature(load_kind(kind)).parameters
    for name, values in text_options.items():
        param = params.get(name)
        if param is not None and "Path" in str(param.annotation):
            raise ConfigError(f"option {name} names a file: a server reads no files; not taken")
        if any(len(v) > MAX_OPTION_CHARS for v in values):
            raise ConfigError(f"option {name} is longer than {MAX_OPTION_CHARS} characters")


def render(report: Report, fmt: str) -> tuple[str, str]:
    """(body, media type) of a report in ``md``, ``html`` or ``json``."""
    from greenml.report.html import render_html
    from greenml.report.markdown import render_json, render_markdown

    renderer = {"md": render_markdown, "html": render_html, "json": render_json}[fmt]
    return renderer(report), FORMATS[fmt]


def _pair(text: str, what: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ConfigError(f"{what} must be KEY=VALUE, not {text!r}")
    return key, value

"""The runs table: sorted by any column (the header links), searched by text, filtered,
one slice at a time, with the project's saved filters (:mod:`saved_filters`).

Everything is a plain GET link or form, so sorting and searching work with
JavaScript off and every view of the table has a URL to share.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from greenml.quantities import duration, energy, mass, money, percent
from greenml.report.svg import esc
from greenml.server.api_runs import run_filter
from greenml.server.dashboard.layout import Markup, link, page, scroll, table_body
from greenml.server.dashboard.saved_filters import saved_filters_html
from greenml.server.state import scope, state_of
from greenml.store import query_table
from greenml.store.schema import RUN_STATUSES

router = APIRouter(include_in_schema=False)
FILTERS = ("q", "name", "tag", "status", "user", "since", "until")
"""The query parameters that choose runs (a saved filter keeps these and the sort)."""
COLUMNS = (  # (header, sort key or "", numeric)
    ("run", "name", False), ("status", "status", False), ("started (UTC)", "started", False),
    ("duration", "duration", True), ("job / node", "", False), ("user", "user", False),
    ("tags", "", False), ("measured", "measured", True), ("energy", "energy", True),
    ("CO2eq", "co2", True), ("cost", "cost", True),
)  # fmt: skip


@router.get("/runs")
def runs_page(
    request: Request, q: str = "", name: str = "", tag: str = "", status: str = "",
    user: str = "", since: str = "", until: str = "", sort: str = "started",
    order: str = "desc", offset: int = Query(0, ge=0),
    limit: int = Query(50, ge=1, le=500),
) -> Response:  # fmt: skip
    where = scope(request, "read")
    values = {"q": q, "name": name, "tag": tag, "status": status, "user": user,
              "since": since, "until": until}  # fmt: skip
    tags = [t.strip() for t in tag.split(",") if t.strip()]
    found = run_filter(where, name, tags, status, user, since, until)
    descending = order != "asc"
    rows, total = query_table.sorted_runs(
        state_of(request).store, found, search=q, sort=sort, descending=descending,
        offset=offset, limit=limit,
    )  # fmt: skip
    view = {**values, "sort": sort, "order": "desc" if descending else "asc"}
    shown = f"{offset + 1}–{offset + len(rows)} of {total}" if rows else f"0 of {total}"
    pager = " · ".join(str(link("/runs", text, **view, offset=at, limit=limit))
                       for text, at, ok in (("← Previous", max(offset - limit, 0), offset > 0),
                                            ("Next →", offset + limit, offset + limit < total))
                       if ok)  # fmt: skip
    body = (
        f"<h1>Runs of {esc(where.project)}</h1>{filter_form(view)}"
        + saved_filters_html(request, where, view)
        + f'<p>Runs {esc(shown)} · {link("/runs.csv", "Download these runs as CSV", **values)}'
        f' · {link("/charts", "Charts of the project")}</p>'
        + scroll(f"<table class=\"runs\">{_head(view)}"
                 f"{table_body([_row(r) for r in rows], _numeric())}</table>", "Runs")
        + (f'<nav aria-label="pages"><p>{pager}</p></nav>' if pager else "")
        + ("" if rows else '<p class="muted">No runs match.</p>')
    )  # fmt: skip
    return page("Runs", body, project=where.project, csrf=where.csrf)


def _numeric() -> tuple[int, ...]:
    return tuple(i for i, (_, _, numeric) in enumerate(COLUMNS) if numeric)


def _head(view: dict[str, str]) -> str:
    """Header cells; a sortable column links to the table sorted by it (again: reversed)."""
    cells = []
    for header, key, numeric in COLUMNS:
        css = ' class="num"' if numeric else ""
        if not key:
            cells.append(f'<th scope="col"{css}>{esc(header)}</th>')
            continue
        current = view["sort"] == key
        order = "asc" if current and view["order"] == "desc" else "desc"
        arrow = ("▼" if view["order"] == "desc" else "▲") if current else ""
        aria = (' aria-sort="descending"' if view["order"] == "desc" else
                ' aria-sort="ascending"') if current else ""  # fmt: skip
        target = link("/runs", f"{header} {arrow}".strip(), **{**view, "sort": key, "order": order})
        cells.append(f'<th scope="col"{css}{aria} data-sort="{key}">{target}</th>')
    return f"<thead><tr>{''.join(cells)}</tr></thead>"


def _row(r: dict[str, Any]) -> list[Any]:
    tags = ", ".join(f"{k}={v}" for k, v in (r.get("tags") or {}).items())
    job = r.get("job") or {}
    where = " on ".join(str(x) for x in (job.get("job_id"), job.get("node") or r.get("hostname"))
                        if x)  # fmt: skip
    total, measured = r.get("energy_j"), r.get("measured_j")
    share = percent(measured / total, digits=2) if total and measured is not None else "unknown"
    run_link = link(f"/runs/{r['id']}", r.get("name") or r["id"])
    return [
        Markup(f'{run_link}<br><span class="muted id">{esc(r["id"])}</span>'),
        r["status"], (r.get("started_at") or "")[:16].replace("T", " "),
        "unknown" if r.get("duration_s") is None else duration(float(r["duration_s"])),
        where or "unknown", r.get("user") or "", tags, share,
        _or(total, lambda v: energy(v, r.get("energy_uncertainty_j"))),
        _or(r.get("co2_g"), lambda v: mass(v, r.get("co2_uncertainty_g"))),
        _or(r.get("cost_usd"), lambda v: money(v, r.get("cost_uncertainty_usd"))),
    ]  # fmt: skip


def _or(value: float | None, fmt: Any) -> str:
    return "unknown" if value is None else str(fmt(value))


def filter_form(view: dict[str, str]) -> str:
    """The search box and filters (GET); the sort travels with them."""
    options = "".join(
        f'<option value="{esc(s)}"{" selected" if view["status"] == s else ""}>{esc(s or "any")}'
        "</option>" for s in ("", *RUN_STATUSES)
    )  # fmt: skip
    fields = "".join(
        f'<label>{esc(label)}<input name="{key}" value="{esc(view[key])}"'
        f' placeholder="{esc(hint)}"{" type=search" if key == "q" else ""}></label>'
        for key, label, hint in (
            ("q", "search", "words: name, tag, user…"),
            ("name", "name", "exact name"), ("tag", "tags", "key=value, …"),
            ("user", "user", ""), ("since", "since", "2024-05-01"), ("until", "until", ""),
        )
    )  # fmt: skip
    keep = "".join(f'<input type="hidden" name="{k}" value="{esc(view[k])}">'
                   for k in ("sort", "order"))  # fmt: skip
    return (f'<form class="filters" method="get" action="/runs" role="search">{fields}'
            f'<label>status<select name="status">{options}</select></label>{keep}'
            '<button type="submit">Filter</button></form>')  # fmt: skip


__all__ = ["FILTERS", "filter_form", "router"]

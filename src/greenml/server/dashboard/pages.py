"""Dashboard routes: sign in and out, the runs table with filters, CSV and report downloads.

The run page, project page and comparison are in :mod:`run_page` and :mod:`project_page`.
Forms are plain HTML (GET for filters, POST for signing in and out), so every
page works with JavaScript off.
"""

from __future__ import annotations

import csv
import io
from typing import Annotated, Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Query, Request
from fastapi.responses import RedirectResponse, Response

from greenml.errors import AccessDenied, ConfigError
from greenml.quantities import energy, mass, money
from greenml.report.svg import esc
from greenml.server.api_runs import run_filter
from greenml.server.auth import SESSION_COOKIE, SESSION_TTL_S, same_origin
from greenml.server.dashboard import job_page, project_page, run_page, serving_page
from greenml.server.dashboard.layout import CSRF_FIELD, link, page, security_headers, table
from greenml.server.reports import FORMATS, build, render
from greenml.server.state import scope, state_of
from greenml.store import access, query
from greenml.store.csv_cells import csv_cell
from greenml.store.schema import RUN_STATUSES

router = APIRouter(include_in_schema=False)
router.include_router(run_page.router)
router.include_router(project_page.router)
router.include_router(job_page.router)
router.include_router(serving_page.router)
FILTERS = ("name", "tag", "status", "user", "since", "until")


@router.get("/")
def home(request: Request) -> Response:
    return RedirectResponse("/runs", status_code=303)


@router.get("/login")
def login_form(request: Request, error: str = "") -> Response:
    message = f'<p class="error">{esc(error)}</p>' if error else ""
    body = (
        "<h1>Sign in</h1>"
        "<p>Paste a token of your project (<code>greenml server token create</code>).</p>"
        f"{message}"
        '<form method="post" action="/login"><label>Token '
        '<input type="password" name="token" autocomplete="off" size="60" required></label> '
        '<button type="submit">Sign in</button></form>'
    )
    return page("Sign in", body, status=401 if error else 200)


@router.post("/login")
async def login(request: Request) -> Response:
    if not same_origin(request):
        return login_form(request, "Not signed in: the sign-in form was sent from another site")
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    token = (form.get("token") or [""])[0].strip()
    state = state_of(request)
    try:
        access.authenticate(state.store, token)
    except AccessDenied as exc:
        return login_form(request, f"Not signed in: {exc}")
    response = RedirectResponse("/runs", status_code=303)
    secure = request.url.scheme == "https" or request.headers.get("x-forwarded-proto") == "https"
    response.set_cookie(SESSION_COOKIE, state.sessions.open(token), max_age=SESSION_TTL_S,
                        httponly=True, samesite="strict", secure=secure, path="/")  # fmt: skip
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    """Sign out: the form must carry the session's CSRF token and come from this server."""
    sid = request.cookies.get(SESSION_COOKIE)
    if sid:
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        sent = (form.get(CSRF_FIELD) or [""])[0]
        sessions = state_of(request).sessions
        if not same_origin(request) or not sessions.check_csrf(sid, sent):
            raise AccessDenied("sign out from the dashboard's own button (CSRF check failed)", 403)
        sessions.close(sid)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


@router.get("/runs")
def runs_page(
    request: Request, name: str = "", tag: str = "", status: str = "", user: str = "",
    since: str = "", until: str = "", cursor: str | None = None,
    limit: int = Query(50, ge=1, le=query.MAX_PAGE),
) -> Response:  # fmt: skip
    where = scope(request, "read")
    values = {"name": name, "tag": tag, "status": status, "user": user, "since": since,
              "until": until}  # fmt: skip
    tags = [t.strip() for t in tag.split(",") if t.strip()]
    found = run_filter(where, name, tags, status, user, since, until)
    runs, next_cursor = query.find_runs(state_of(request).store, found, limit=limit, cursor=cursor)
    rows = [_run_row(r) for r in runs]
    more = link("/runs", "Next page →", **values, cursor=next_cursor) if next_cursor else ""
    body = (
        f"<h1>Runs of {esc(where.project)}</h1>{_filter_form(values)}"
        f"<p>{link('/runs.csv', 'Download these runs as CSV', **values)}</p>"
        + table(["run", "name", "status", "started (UTC)", "user", "tags", "energy", "CO2eq",
                 "cost"], rows, numeric=(6, 7, 8))
        + (f"<p>{more}</p>" if more else "")
        + ("" if rows else '<p class="muted">No runs match.</p>')
    )
    return page("Runs", body, project=where.project, csrf=where.csrf)


def _filter_form(values: dict[str, str]) -> str:
    options = "".join(
        f'<option value="{esc(s)}"{" selected" if values["status"] == s else ""}>{esc(s or "any")}'
        "</option>" for s in ("", *RUN_STATUSES)
    )  # fmt: skip
    fields = "".join(
        f'<label>{esc(label)}<input name="{key}" value="{esc(values[key])}"'
        f' placeholder="{esc(hint)}"></label>'
        for key, label, hint in (
            ("name", "name", "exact name"), ("tag", "tags", "key=value, …"),
            ("user", "user", ""), ("since", "since", "2024-05-01"), ("until", "until", ""),
        )
    )  # fmt: skip
    return (f'<form class="filters" method="get" action="/runs">{fields}'
            f'<label>status<select name="status">{options}</select></label>'
            '<button type="submit">Filter</button></form>')  # fmt: skip


def _run_row(r: dict[str, Any]) -> list[Any]:
    tags = ", ".join(f"{k}={v}" for k, v in (r.get("tags") or {}).items())
    return [
        link(f"/runs/{r['id']}", r["id"]), r.get("name") or "", r["status"],
        (r.get("started_at") or "")[:19].replace("T", " "), r.get("user") or "", tags,
        _or_dash(r.get("energy_j"), lambda v: energy(v, r.get("energy_uncertainty_j"))),
        _or_dash(r.get("co2_g"), lambda v: mass(v, r.get("co2_uncertainty_g"))),
        _or_dash(r.get("cost_usd"), lambda v: money(v, r.get("cost_uncertainty_usd"))),
    ]  # fmt: skip


def _or_dash(value: float | None, fmt: Any) -> str:
    return "unknown" if value is None else str(fmt(value))


CSV_COLUMNS = ("id", "name", "status", "started_at", "duration_s", "user", "tags", "energy_j",
               "energy_uncertainty_j", "measured_j", "co2_g", "co2_uncertainty_g", "cost_usd",
               "cost_uncertainty_usd")  # fmt: skip


@router.get("/runs.csv")
def runs_csv(
    request: Request, name: str = "", tag: str = "", status: str = "", user: str = "",
    since: str = "", until: str = "",
) -> Response:  # fmt: skip
    """Every run that matches the filters (all pages), one row each, SI units in the headers."""
    where = scope(request, "read")
    tags = [t.strip() for t in tag.split(",") if t.strip()]
    found = run_filter(where, name, tags, status, user, since, until)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    cursor = None
    while True:
        runs, cursor = query.find_runs(state_of(request).store, found, limit=query.MAX_PAGE,
                                       cursor=cursor)  # fmt: skip
        for r in runs:
            r = {**r, "tags": ";".join(f"{k}={v}" for k, v in (r.get("tags") or {}).items())}
            writer.writerow([csv_cell(r.get(c)) for c in CSV_COLUMNS])
        if cursor is None:
            break
    disposition = f'attachment; filename="{where.project}-runs.csv"'
    headers = {**security_headers(), "Content-Disposition": disposition}
    return Response(out.getvalue(), media_type="text/csv; charset=utf-8", headers=headers)


@router.get("/download/{kind}")
def download_report(
    request: Request, kind: str, run: Annotated[list[str] | None, Query()] = None,
    tag: Annotated[list[str] | None, Query()] = None,
    option: Annotated[list[str] | None, Query()] = None, format: str = "html",
) -> Response:  # fmt: skip
    """A report of the CLI's kinds, as a file (md, html or json)."""
    where = scope(request, "read")
    if format not in FORMATS:
        raise ConfigError(f"format must be one of {', '.join(FORMATS)}")
    built = build(state_of(request).store, where, kind, run or [], tag or [], option or [])
    body, media = render(built, format)
    filename = f"greenml-{kind}.{format}"
    headers = {**security_headers(), "Content-Disposition": f'attachment; filename="{filename}"'}
    return Response(body, media_type=media, headers=headers)


__all__ = ["router"]

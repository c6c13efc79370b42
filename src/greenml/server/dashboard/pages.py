"""Dashboard routes: sign in and out, CSV and report downloads, and the pages' routers.

The runs table is in :mod:`runs_table`, the run page in :mod:`run_page`, the project page in
:mod:`project_page`, the cross-run charts in :mod:`charts_page`, the comparison in
:mod:`compare_page`.
Forms are plain HTML (GET for filters, POST for signing in and out), so every
page works with JavaScript off.
"""

from __future__ import annotations

import csv
import io
from typing import Annotated
from urllib.parse import parse_qs

from fastapi import APIRouter, Query, Request
from fastapi.responses import RedirectResponse, Response

from greenml.errors import AccessDenied, ConfigError
from greenml.report.svg import esc
from greenml.server.api_runs import run_filter
from greenml.server.auth import SESSION_COOKIE, SESSION_TTL_S, same_origin
from greenml.server.dashboard import (
    charts_page,
    compare_page,
    job_page,
    project_page,
    run_page,
    runs_table,
    saved_filters,
    serving_page,
)
from greenml.server.dashboard.layout import CSRF_FIELD, page, security_headers
from greenml.server.reports import FORMATS, build, render
from greenml.server.state import scope, state_of
from greenml.store import access, query, query_table
from greenml.store.csv_cells import csv_cell

router = APIRouter(include_in_schema=False)
router.include_router(run_page.router)
router.include_router(project_page.router)
router.include_router(job_page.router)
router.include_router(serving_page.router)
router.include_router(runs_table.router)
router.include_router(saved_filters.router)
router.include_router(charts_page.router)
router.include_router(compare_page.router)


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


CSV_COLUMNS = ("id", "name", "status", "started_at", "duration_s", "user", "tags", "energy_j",
               "energy_uncertainty_j", "measured_j", "co2_g", "co2_uncertainty_g", "cost_usd",
               "cost_uncertainty_usd")  # fmt: skip


@router.get("/runs.csv")
def runs_csv(
    request: Request, q: str = "", name: str = "", tag: str = "", status: str = "",
    user: str = "", since: str = "", until: str = "",
) -> Response:  # fmt: skip
    """Every run that matches the search and filters (all pages), SI units in the headers."""
    where = scope(request, "read")
    tags = [t.strip() for t in tag.split(",") if t.strip()]
    found = run_filter(where, name, tags, status, user, since, until)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    offset = 0
    while True:
        runs, total = query_table.sorted_runs(state_of(request).store, found, search=q,
                                              offset=offset, limit=query.MAX_PAGE)  # fmt: skip
        for r in runs:
            r = {**r, "tags": ";".join(f"{k}={v}" for k, v in (r.get("tags") or {}).items())}
            writer.writerow([csv_cell(r.get(c)) for c in CSV_COLUMNS])
        offset += len(runs)
        if not runs or offset >= total:
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

"""``/api/v1/projects/{project}/…``: totals over time, reports, tokens; ``/api/v1/whoami``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from greenml.errors import ConfigError
from greenml.server.api_runs import parse_time
from greenml.server.reports import FORMATS, build, render
from greenml.server.state import scope, state_of
from greenml.store import access, query

router = APIRouter(prefix="/api/v1", tags=["projects"])


@router.get("/whoami", summary="The project and role of the token")
def whoami(request: Request) -> dict[str, Any]:
    where = scope(request, "read")
    return {"project": where.project, "role": where.role}


@router.get("/projects/{project}/aggregates",
            summary="Energy, CO2eq and cost per day, week or month, with uncertainty")  # fmt: skip
def aggregates(
    request: Request,
    project: str,
    period: str = Query("week", description="day, week (from Monday, UTC) or month"),
    since: str | None = None,
    until: str | None = None,
    top: int = Query(10, ge=0, le=100, description="How many top consumers to list"),
) -> dict[str, Any]:
    where = scope(request, "read", project)
    store = state_of(request).store
    buckets = query.aggregate(store, where.project_id, period, parse_time(since, "since"),
                              parse_time(until, "until"))  # fmt: skip
    return {
        "project": where.project,
        "period": period,
        "uncertainty": "absolute, added linearly over runs (shared sensors and grid)",
        "buckets": buckets,
        "top_runs": query.top_runs(store, where.project_id, top) if top else [],
    }


@router.get("/projects/{project}/reports/{kind}",
            summary="A report of a CLI kind: statement, euaiact, sci, label, savings")  # fmt: skip
def report(
    request: Request,
    project: str,
    kind: str,
    run: Annotated[list[str] | None, Query(description="Run ids of the project")] = None,
    tag: Annotated[list[str] | None, Query(description="KEY=VALUE: runs with these tags")] = None,
    option: Annotated[list[str] | None, Query(description="KEY=VALUE options (as -O)")] = None,
    format: str = Query("md", description="md, html or json"),
) -> Response:
    where = scope(request, "read", project)
    if format not in FORMATS:
        raise ConfigError(f"format must be one of {', '.join(FORMATS)}")
    built = build(state_of(request).store, where, kind, run or [], tag or [], option or [])
    body, media = render(built, format)
    return Response(body, media_type=media)


@router.post("/projects/{project}/tokens", status_code=201,
             summary="Create a token of this project (admin tokens only); shown once")  # fmt: skip
def create_token(request: Request, project: str, role: str = Query(...)) -> dict[str, Any]:
    where = scope(request, "admin", project)
    secret = access.create_token(state_of(request).store, where.project, role)
    return {"project": where.project, "role": role, "token": secret}

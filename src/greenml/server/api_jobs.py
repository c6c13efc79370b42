"""``/api/v1/jobs``: the jobs of the token's project, each one job from many nodes' runs.

The JSON is that of ``greenml jobs list --json`` and ``greenml jobs show ID --json``,
made by the same :func:`~greenml.jobs.summary.summarize_job` over the runs the
nodes uploaded to this project only: a job id used in two projects is two jobs.
Second sources (``sacct``, Kepler) are not read here: they live beside the nodes.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request

from greenml.jobs.summary import summarize_job
from greenml.server.auth import Scope
from greenml.server.state import scope, state_of
from greenml.store.jobs import all_jobs, job_runs

router = APIRouter(prefix="/api/v1", tags=["jobs"])
MAX_JOBS = 10_000


@router.get("/jobs", summary="A project's jobs, newest first (as `greenml jobs list --json`)")
def list_jobs(
    request: Request,
    project: str | None = Query(None, description="Default: the token's project"),
    limit: int = Query(20, ge=1, le=MAX_JOBS),
) -> dict[str, Any]:
    where = scope(request, "read", project)
    return {"project": where.project, "jobs": project_jobs(request, where, limit)}


@router.get("/jobs/{job_id:path}", summary="One job added up over its nodes (as `jobs show`)")
def get_job(request: Request, job_id: str, project: str | None = None) -> dict[str, Any]:
    return project_job(request, scope(request, "read", project), job_id)


def project_jobs(request: Request, where: Scope, limit: int) -> list[dict[str, Any]]:
    """The newest ``limit`` jobs of the scope's project, one listing object each."""
    found = list(all_jobs(state_of(request).store, where.project_id).items())[:limit]
    return [summarize_job(job_id, records).to_listing() for job_id, records in found]


def project_job(request: Request, where: Scope, job_id: str) -> dict[str, Any]:
    """One job of the scope's project, added up (``JobNotFound`` when it has none of its runs)."""
    records = job_runs(state_of(request).store, job_id, where.project_id)
    return summarize_job(job_id, records).to_dict()

"""Jobs and runs read from a team server: ``GET /api/v1/jobs[/{id}]``, a job's diagnosis
(``/api/v1/diagnosis/jobs/{id}``) and the run list (``/api/v1/runs``).

The server adds a job up with the same :func:`~greenml.jobs.summary.summarize_job`
as a local store does, over the runs its project received from every node, so
``greenml jobs list|show`` print the same thing either way. Each failure is one
line (:class:`~greenml.errors.ServerReadError`, with its reason from the one
team-server client, :mod:`greenml.client`): no token, a refused token (401,
403), no such job (404), a server that cannot be reached or answers 5xx.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from greenml.client import BAD_DATA, TeamClient
from greenml.errors import ServerReadError
from greenml.jobs.summary import JobSummary
from greenml.run.server_settings import ServerSettings


def server_jobs(settings: ServerSettings, limit: int) -> list[dict[str, Any]]:
    """The newest ``limit`` jobs of the token's project, as ``jobs list --json`` lines.

    Raises:
        ServerReadError: See the module docstring.
    """
    found = _get(settings, "/api/v1/jobs", {"limit": limit})
    jobs = found.get("jobs")
    if not isinstance(jobs, list) or not all(isinstance(j, dict) for j in jobs):
        raise _unreadable(f"{settings.url} answered a job list without 'jobs'")
    return jobs


def server_job(settings: ServerSettings, job_id: str) -> JobSummary:
    """One job of the token's project, as the store's ``summarize_job`` would give it.

    Raises:
        ServerReadError: See the module docstring; or an answer that is not a job.
    """
    found = _get(settings, f"/api/v1/jobs/{quote(job_id, safe='')}", {})
    try:
        return JobSummary.from_dict(found)
    except (KeyError, TypeError) as exc:
        raise _unreadable(f"{settings.url} answered job {job_id!r} in a form this greenml "
                              f"cannot read ({type(exc).__name__}: {exc})") from None  # fmt: skip


def server_job_diagnosis(settings: ServerSettings, job_id: str) -> dict[str, Any]:
    """A job's diagnosis from the server (``greenml diagnose --job ID --json``'s JSON).

    Raises:
        ServerReadError: See the module docstring.
    """
    found = _get(settings, f"/api/v1/diagnosis/jobs/{quote(job_id, safe='')}", {})
    if not isinstance(found.get("energy"), dict) or "problems" not in found:
        raise _unreadable(f"{settings.url} answered a diagnosis of {job_id!r} in a form "
                              "this greenml cannot read")  # fmt: skip
    return found


def server_runs(
    settings: ServerSettings, limit: int, name: str | None, tags: dict[str, str]
) -> list[dict[str, Any]]:
    """The newest ``limit`` runs of the token's project, as ``runs list --json`` lines.

    Raises:
        ServerReadError: See the module docstring.
    """
    params: dict[str, Any] = {"limit": min(limit, 500)}
    if name is not None:
        params["name"] = name
    if tags:
        params["tag"] = [f"{k}={v}" for k, v in tags.items()]
    found = _get(settings, "/api/v1/runs", params)
    runs = found.get("runs")
    if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        raise _unreadable(f"{settings.url} answered a run list without 'runs'")
    return runs


def server_run(settings: ServerSettings, run_id: str) -> dict[str, Any]:
    """One run of the token's project as an upload document (record and windows, no samples).

    Raises:
        ServerReadError: See the module docstring; or an answer without a record.
    """
    found = _get(settings, f"/api/v1/runs/{quote(run_id, safe='')}", {"points": 0})
    if not isinstance(found.get("record"), dict):
        raise _unreadable(f"{settings.url} answered run {run_id!r} without its record")
    windows = found.get("windows")
    return {"format": 1, "record": found["record"],
            "windows": windows if isinstance(windows, list) else [], "samples": []}  # fmt: skip


def _get(settings: ServerSettings, path: str, params: dict[str, Any]) -> dict[str, Any]:
    return TeamClient(settings).get_json(path, params)


def _unreadable(message: str) -> ServerReadError:
    return ServerReadError(message, BAD_DATA)

"""Jobs and runs read from a team server: ``GET /api/v1/jobs[/{id}]``, a job's diagnosis
(``/api/v1/diagnosis/jobs/{id}``) and the run list (``/api/v1/runs``).

The server adds a job up with the same :func:`~greenml.jobs.summary.summarize_job`
as a local store does, over the runs its project received from every node, so
``greenml jobs list|show`` print the same thing either way. Each failure is one
line (:class:`~greenml.errors.ServerReadError`): no token, a refused token (401,
403), no such job (404), a server that cannot be reached or answers 5xx.

Lazy imports: httpx, only when a server is asked.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from greenml.errors import ServerReadError
from greenml.jobs.summary import JobSummary
from greenml.run.server_settings import ServerSettings

TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 3.0


def server_jobs(settings: ServerSettings, limit: int) -> list[dict[str, Any]]:
    """The newest ``limit`` jobs of the token's project, as ``jobs list --json`` lines.

    Raises:
        ServerReadError: See the module docstring.
    """
    found = _get(settings, "/api/v1/jobs", {"limit": limit})
    jobs = found.get("jobs")
    if not isinstance(jobs, list) or not all(isinstance(j, dict) for j in jobs):
        raise ServerReadError(f"{settings.url} answered a job list without 'jobs'")
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
        raise ServerReadError(f"{settings.url} answered job {job_id!r} in a form this greenml "
                              f"cannot read ({type(exc).__name__}: {exc})") from None  # fmt: skip


def server_job_diagnosis(settings: ServerSettings, job_id: str) -> dict[str, Any]:
    """A job's diagnosis from the server (``greenml diagnose --job ID --json``'s JSON).

    Raises:
        ServerReadError: See the module docstring.
    """
    found = _get(settings, f"/api/v1/diagnosis/jobs/{quote(job_id, safe='')}", {})
    if not isinstance(found.get("energy"), dict) or "problems" not in found:
        raise ServerReadError(f"{settings.url} answered a diagnosis of {job_id!r} in a form "
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
        raise ServerReadError(f"{settings.url} answered a run list without 'runs'")
    return runs


def server_run(settings: ServerSettings, run_id: str) -> dict[str, Any]:
    """One run of the token's project as an upload document (record and windows, no samples).

    Raises:
        ServerReadError: See the module docstring; or an answer without a record.
    """
    found = _get(settings, f"/api/v1/runs/{quote(run_id, safe='')}", {"points": 0})
    if not isinstance(found.get("record"), dict):
        raise ServerReadError(f"{settings.url} answered run {run_id!r} without its record")
    windows = found.get("windows")
    return {"format": 1, "record": found["record"],
            "windows": windows if isinstance(windows, list) else [], "samples": []}  # fmt: skip


def _get(settings: ServerSettings, path: str, params: dict[str, Any]) -> dict[str, Any]:
    import httpx

    if not settings.token:
        raise ServerReadError(f"no token for {settings.url}: set GREENML_TOKEN or [server] token")
    try:
        response = httpx.get(
            f"{settings.url}{path}", params=params,
            headers={"Authorization": f"Bearer {settings.token}", "Accept": "application/json"},
            timeout=httpx.Timeout(TIMEOUT_S, connect=CONNECT_TIMEOUT_S),
        )  # fmt: skip
    except httpx.HTTPError as exc:
        raise ServerReadError(f"{settings.url} unreachable: {type(exc).__name__}: {exc}") from exc
    if response.status_code != 200:
        raise ServerReadError(f"{settings.url} answered {response.status_code}: "
                              f"{_reason(response)}")  # fmt: skip
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise ServerReadError(f"{settings.url} answered something that is not a JSON object")
    return body


def _reason(response: Any) -> str:
    try:
        message = response.json().get("error")
    except (ValueError, AttributeError):
        message = None
    text = str(message) if message else response.text or response.reason_phrase
    return " ".join(text.split())[:300]

"""``/api/v1/diagnosis/jobs/{id}``: a job's diagnosis, as ``greenml diagnose --job ID --json``.

Stragglers (critical-path rank and the energy the others spend waiting), scaling
against earlier jobs of the same name, and nodes out of line, made by the same
:func:`~greenml.diagnose.job.diagnose_job` as the CLI, over the token's project's
runs only (the job's, and the earlier jobs of its name). Diagnoses are kept a
minute per project and job: reading every node's windows and samples is the slow part.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from fastapi import APIRouter, Request

from greenml.server.auth import Scope
from greenml.server.state import scope, state_of

router = APIRouter(prefix="/api/v1", tags=["jobs"])
KEEP_S = 60.0
MAX_KEPT = 256
_kept: dict[tuple[str, int | None, str], tuple[float, dict[str, Any]]] = {}
_lock = threading.Lock()


@router.get("/diagnosis/jobs/{job_id:path}",
            summary="A job's diagnosis (as `greenml diagnose --job ID --json`)")  # fmt: skip
def get_job_diagnosis(request: Request, job_id: str, project: str | None = None) -> dict[str, Any]:
    return project_job_diagnosis(request, scope(request, "read", project), job_id)


def project_job_diagnosis(request: Request, where: Scope, job_id: str) -> dict[str, Any]:
    """The diagnosis of one job of the scope's project (``JobNotFound`` when it has no run)."""
    from greenml.diagnose.job import diagnose_job

    store = state_of(request).store
    key = (store.url, where.project_id, job_id)
    now = time.monotonic()
    with _lock:
        found = _kept.get(key)
    if found is not None and now - found[0] < KEEP_S:
        return found[1]
    result = diagnose_job(store, job_id, project_id=where.project_id).to_dict()
    with _lock:
        if len(_kept) >= MAX_KEPT:
            _kept.pop(next(iter(_kept)))
        _kept[key] = (now, result)
    return result

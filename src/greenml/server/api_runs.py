"""``/api/v1/runs``: upload a run, list a project's runs, read one run with its samples."""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from greenml.errors import ConfigError, RecordValueError, RequestTooLarge, RunNotFound
from greenml.server.auth import Scope
from greenml.server.samples import sample_series
from greenml.server.state import scope, state_of
from greenml.store import query
from greenml.store.transfer import import_run

router = APIRouter(prefix="/api/v1", tags=["runs"])

UPLOAD_DOC = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {
            "type": "object",
            "required": ["format", "record"],
            "properties": {
                "format": {"const": 1},
                "record": {"description": "The run record (greenml schema run-record)"},
                "windows": {"type": "array", "items": {"type": "object"}},
                "samples": {"type": "array", "items": {"type": "object"},
                            "description": "Per device: device, component, t, power_w, "
                                           "utilization, sm_activity, memory_used_bytes, "
                                           "sm_clock_mhz (lists of numbers or null)"},
                "ledger_entry": {"type": ["object", "null"]},
                "user": {"type": ["string", "null"]},
            },
        }}},
    }
}  # fmt: skip


@router.post("/runs", status_code=201, openapi_extra=UPLOAD_DOC,
             summary="Upload a finished run to the token's project (idempotent)")  # fmt: skip
async def upload_run(request: Request) -> JSONResponse:
    """201 when stored, 200 when the run was already there (nothing is written twice)."""
    where = await run_in_threadpool(scope, request, "write")
    state = state_of(request)
    async with state.upload_slots:  # parsed JSON takes ~6x its size: a few at a time
        body = await read_body(request, state.max_body_bytes)
        document = await run_in_threadpool(parse_json, body)  # off the event loop
        del body
        try:
            created = await run_in_threadpool(import_run, state.store, document,
                                              where.project_id)  # fmt: skip
        except RecursionError:
            raise RecordValueError("the upload is nested too deeply") from None
    run_id = document["record"]["id"]
    return JSONResponse(
        {"id": run_id, "project": where.project, "created": created},
        status_code=201 if created else 200,
    )


async def read_body(request: Request, limit: int) -> bytearray:
    """The body, streamed into one buffer (no copy of its pieces), refused past ``limit``.

    Raises:
        RequestTooLarge: Over ``limit`` bytes (413), found while reading, not after.
    """
    declared = request.headers.get("content-length", "")
    too_large = f"request body is larger than the server's limit of {limit} bytes"
    if declared.isdigit() and int(declared) > limit:
        raise RequestTooLarge(too_large)
    body = bytearray()
    async for piece in request.stream():
        body += piece
        if len(body) > limit:
            raise RequestTooLarge(too_large)
    return body


def parse_json(body: bytes | bytearray) -> Any:
    """A JSON body; refused: malformed, nested too deeply, ``NaN``/``Infinity``, ``1e400``.

    Raises:
        ConfigError: Not JSON (400).
        RecordValueError: Valid JSON that no run holds (422).
    """
    try:
        return json.loads(body, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise RecordValueError("the JSON body is nested too deeply") from None
    except RecordValueError:
        raise
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"malformed JSON: {exc}") from None


def _no_constant(name: str) -> Any:
    raise RecordValueError(f"{name} is not a number a run can hold (JSON has no {name})")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise RecordValueError(f"{text[:40]} is beyond any finite number")
    return value


@router.get("/runs", summary="A project's runs, newest first, one page at a time")
def list_runs(
    request: Request,
    project: str | None = Query(None, description="Default: the token's project"),
    name: str | None = None,
    tag: Annotated[list[str] | None, Query(description="KEY=VALUE; repeat: all must match")] = None,
    status: str | None = None,
    user: str | None = None,
    since: str | None = Query(None, description="ISO 8601 time or Unix seconds"),
    until: str | None = Query(None, description="ISO 8601 time or Unix seconds (exclusive)"),
    cursor: str | None = None,
    limit: int = Query(50, ge=1, le=query.MAX_PAGE),
) -> dict[str, Any]:
    where = scope(request, "read", project)
    found = run_filter(where, name, tag or [], status, user, since, until)
    runs, next_cursor = query.find_runs(state_of(request).store, found, limit=limit, cursor=cursor)
    return {"project": where.project, "runs": runs, "next_cursor": next_cursor}


@router.get("/runs/{run_id}", summary="One run: record, windows, samples, upload and ledger")
def get_run(
    request: Request,
    run_id: str,
    project: str | None = None,
    points: int | None = Query(
        1000, ge=0, le=1_000_000,
        description="At most this many samples per device (means of equal slices); "
                    "0: no samples",
    ),
    all_samples: bool = Query(False, description="Every stored sample (ignores points)"),
) -> dict[str, Any]:  # fmt: skip
    where = scope(request, "read", project)
    return run_document(request, where, run_id, None if all_samples else points)


def run_document(
    request: Request, where: Scope, run_id: str, points: int | None
) -> dict[str, Any]:
    """The JSON of one run of the scope's project (404 for another project's run)."""
    store = state_of(request).store
    if query.project_of_run(store, run_id) != where.project_id:
        raise RunNotFound(f"no run {run_id!r} in project {where.project!r}")
    record = store.get_record(run_id, exact=True)
    upload = query.upload_of(store, run_id) or {}
    samples = [] if points == 0 else sample_series(store.sample_columns(run_id), points)
    return {
        "project": where.project,
        "record": record,
        "windows": store.windows(run_id),
        "samples": samples,
        "upload": {k: upload.get(k) for k in ("user", "uploaded_at")},
        "ledger": ledger_status(record, upload.get("ledger_entry")),
    }


def ledger_status(record: dict[str, Any], entry: dict[str, Any] | None) -> dict[str, Any]:
    """Whether the sender ledgered the run, and whether the record here still matches it."""
    from greenml.ledger.canonical import record_sha256

    if not entry:
        return {"status": "not ledgered", "entry": None}
    here = record_sha256(record)
    matches = entry.get("record_sha256") == here
    return {
        "status": "matches the sender's ledger entry" if matches else "differs from the sender's "
                  "ledger entry",
        "matches": matches, "record_sha256": here, "entry": entry,
    }  # fmt: skip


def run_filter(
    where: Scope, name: str | None, tags: list[str], status: str | None, user: str | None,
    since: str | None, until: str | None,
) -> query.RunFilter:  # fmt: skip
    """A :class:`~greenml.store.query.RunFilter` from query parameters (one line on bad input)."""
    pairs = {}
    for item in tags:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"tag filter must be KEY=VALUE, not {item!r}")
        pairs[key] = value
    return query.RunFilter(
        project_id=where.project_id, name=name or None, tags=pairs, status=status or None,
        user=user or None, since=parse_time(since, "since"), until=parse_time(until, "until"),
    )  # fmt: skip


def parse_time(text: str | None, what: str) -> float | None:
    """Unix seconds of an ISO 8601 time (UTC when no offset) or of a number."""
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"{what} must be an ISO 8601 time or Unix seconds: {text!r}") from None
    if when.tzinfo is None:
        from datetime import timezone

        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()

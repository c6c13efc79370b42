"""``/api/v1/serving``: LLM proxies send per-minute figures; a project reads them back.

A batch is validated whole before anything is stored (422 with one line for the
first bad field): finite, non-negative numbers, minutes on the minute between
2000 and tomorrow, no NUL in any text, lengths within the table's columns.
"""

from __future__ import annotations

import json
import time
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from starlette.concurrency import run_in_threadpool

from greenml.errors import ConfigError, RecordTypeError
from greenml.server.api_runs import parse_time
from greenml.server.state import scope, state_of
from greenml.store import serving

router = APIRouter(prefix="/api/v1", tags=["serving"])

YEAR_2000 = 946_684_800.0
MAX_ROWS = 20_000
BUCKETS = {"minute": 60.0, "hour": 3600.0, "day": 86400.0}
Count = Annotated[int, Field(ge=0, le=10**12)]
Joules = Annotated[float, Field(ge=0.0, le=1e15)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=False)


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("text must not contain NUL")
    return value


class MinuteRow(_Strict):
    """One minute, model and tenant of one proxy ("" model and tenant: idle)."""

    minute: float = Field(ge=YEAR_2000)
    model: str = Field(max_length=255)
    tenant: str = Field(max_length=128)
    requests: Count
    cancelled: Count
    errors: Count
    prompt_tokens: Count
    completion_tokens: Count
    energy_j: Joules
    uncertainty_j: Joules
    prefill_j: Joules
    decode_j: Joules
    idle_j: Joules
    co2eq_g: Annotated[float, Field(ge=0.0, le=1e15)] | None = None

    _text = field_validator("model", "tenant")(_no_nul)

    @field_validator("minute")
    @classmethod
    def _on_the_minute(cls, value: float) -> float:
        if value % 60 or value > time.time() + 86400:
            raise ValueError("must be the start of a UTC minute, not after tomorrow")
        return value


class ServingBatch(_Strict):
    """What a proxy sends every half minute."""

    source: str = Field(min_length=1, max_length=64)
    batch: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    method: str = Field(pattern=r"^[a-z][a-z-]{0,31}$")
    scope: str = Field(default="", max_length=500)
    minutes: list[MinuteRow] = Field(max_length=MAX_ROWS)

    _text = field_validator("source", "scope")(_no_nul)


@router.post("/serving", status_code=201,
             summary="Per-minute LLM serving figures of a proxy (once per batch)")  # fmt: skip
async def upload_serving(request: Request) -> JSONResponse:
    """201 when stored, 200 when this batch was stored before."""
    where = await run_in_threadpool(scope, request, "write")
    batch = parse_batch(await request.body())
    rows = [row.model_dump() for row in batch.minutes]
    stored = serving.Batch(batch.source, batch.batch, batch.method, rows)
    created = await run_in_threadpool(serving.add_batch, state_of(request).store,
                                      where.project_id, stored)  # fmt: skip
    return JSONResponse({"project": where.project, "rows": len(rows), "created": created},
                        status_code=201 if created else 200)  # fmt: skip


def parse_batch(body: bytes) -> ServingBatch:
    """A request body as a batch.

    Raises:
        ConfigError: Not JSON (400).
        RecordTypeError: A field out of range or of the wrong type (422).
    """
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ConfigError(f"malformed JSON: {str(exc)[:200]}") from None
    try:
        return ServingBatch.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise RecordTypeError(f"{where or 'body'}: {first.get('msg', 'invalid')}") from None


@router.get("/projects/{project}/serving",
            summary="LLM serving of a project: J per token, idle share, tenants")  # fmt: skip
def serving_figures(
    request: Request, project: str, since: str | None = None, until: str | None = None,
    bucket: str = Query("hour", description="minute, hour or day"),
) -> dict[str, Any]:  # fmt: skip
    where = scope(request, "read", project)
    return figures(request, where.project_id, where.project, parse_time(since, "since"),
                   parse_time(until, "until"), bucket)  # fmt: skip


def figures(
    request: Request, project_id: int, project: str, since: float | None, until: float | None,
    bucket: str,
) -> dict[str, Any]:  # fmt: skip
    """What the API and the dashboard's serving page show."""
    if bucket not in BUCKETS:
        raise ConfigError(f"bucket must be one of {', '.join(BUCKETS)}")
    store = state_of(request).store
    rows = serving.minutes(store, project_id, since, until)
    step = BUCKETS[bucket]
    grouped: dict[float, list[dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(row["minute"] // step * step, []).append(row)
    return {
        "project": project,
        "bucket": bucket,
        "totals": serving.summarize(rows),
        "series": [{"start": start, **serving.summarize(items)}
                   for start, items in sorted(grouped.items())],
        "models": _keyed(serving.by(store, project_id, "model", since, until)),
        "tenants": _keyed(serving.by(store, project_id, "tenant", since, until)),
        "methods": serving.methods(store, project_id),
        "uncertainty": "absolute, added linearly (one sensor per proxy)",
    }  # fmt: skip


def _keyed(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": r["key"], **serving.summarize([r])} for r in rows]

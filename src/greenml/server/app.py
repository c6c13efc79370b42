"""The team server's ASGI app: the JSON API under ``/api/v1``, the dashboard at ``/``.

Errors are JSON ``{"error": "<one line>"}`` with a 4xx status for what the
client can fix (a value the store cannot hold is 422, never an outage) and 503
when the database fails (a client then keeps the run and retries). No answer
names the database: an outage says only that, and every message is scrubbed of
the store's URL; the details go to the log (logger ``greenml.server``). An
unexpected error is a JSON 500, never a plain-text page. Bodies over
``max_body_bytes`` are refused with 413 before they are read whole.

Lazy imports: none here; this module is the one that imports FastAPI (the ``server`` extra).
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from greenml import __version__
from greenml.errors import (
    AccessDenied,
    ConfigError,
    GreenmlError,
    JobNotFound,
    ProjectNotFound,
    RecordTypeError,
    RecordValueError,
    RequestTooLarge,
    RunConflict,
    RunNotFound,
    StoreError,
)
from greenml.server import api_job_diagnosis, api_jobs, api_projects, api_runs, api_serving
from greenml.server.dashboard import pages
from greenml.server.state import MAX_BODY_BYTES, ServerState
from greenml.store.repository import Store


def create_app(
    db_url: str | None = None, *, public_read: bool = False, max_body_bytes: int = MAX_BODY_BYTES,
    store: Store | None = None,
) -> FastAPI:  # fmt: skip
    """The server over the store at ``db_url`` (or ``store``; upgraded to the current schema).

    Raises:
        ConfigError: Bad URL.
        StoreError: The database cannot be opened.
    """
    app = FastAPI(
        title="greenml team server",
        version=__version__,
        description="Runs, energy, carbon and cost of a team's ML jobs, per project.",
        openapi_url="/api/v1/openapi.json",
        docs_url=None,  # the interactive docs load scripts from a CDN: not served
        redoc_url=None,
    )
    app.state.greenml = ServerState(
        store=store or Store(db_url), public_read=public_read, max_body_bytes=max_body_bytes
    )
    app.include_router(api_runs.router)
    app.include_router(api_projects.router)
    app.include_router(api_jobs.router)
    app.include_router(api_job_diagnosis.router)
    app.include_router(api_serving.router)
    app.include_router(pages.router)
    for cls in _STATUS:
        app.add_exception_handler(cls, _handle)
    app.add_exception_handler(Exception, _unexpected)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_middleware(BodyLimit, limit=max_body_bytes)
    return app


_STATUS: dict[type[GreenmlError], int] = {
    GreenmlError: 400,
    ConfigError: 400,
    RecordTypeError: 422,
    RecordValueError: 422,
    RunNotFound: 404,
    JobNotFound: 404,
    ProjectNotFound: 404,
    RunConflict: 409,
    StoreError: 503,
    AccessDenied: 401,
    RequestTooLarge: 413,
}


log = logging.getLogger("greenml.server")
OUTAGE = "the server's run store is unavailable; keep the run and send it again later"


async def _handle(request: Request, exc: Exception) -> JSONResponse:
    """A greenml error as its status (the most specific class's) and one line."""
    code = next(_STATUS[c] for c in type(exc).__mro__ if c in _STATUS)
    message = str(exc)
    if isinstance(exc, AccessDenied):
        code = exc.status
    if code == 503:
        refused = _refused_value(exc)
        if refused is not None:  # the data, not the database: sending it again cannot help
            code, message = 422, f"the database refused a value of this request: {refused}"
        else:
            log.warning("greenml server: %s %s: %s", request.method, request.url.path, exc)
            message = OUTAGE
    return error_response(code, message, request)


def _refused_value(exc: BaseException) -> str | None:
    """What the database said when it refused a value (SQL ``DataError``), else None."""
    from sqlalchemy.exc import DataError

    from greenml.store.engine import describe_error

    cause = exc.__cause__
    return describe_error(cause) if isinstance(cause, DataError) else None


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    """Any other error: a JSON 500 saying nothing of the server's insides (logged here)."""
    log.error("greenml server: %s %s failed", request.method, request.url.path, exc_info=exc)
    return error_response(500, "internal server error (see the server's log)", request)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    first = errors[0] if errors else {}
    where = ".".join(str(p) for p in first.get("loc", ()))
    return error_response(422, f"{where}: {first.get('msg', 'invalid request')}", request)


def error_response(status: int, message: str, request: Request | None = None) -> JSONResponse:
    """``{"error": message}`` on one line (a browser asking for HTML gets the dashboard's page)."""
    line = " ".join(_scrubbed(message, request).split())[:500]
    if request is not None and _wants_html(request):
        from greenml.server.dashboard.layout import error_page

        return error_page(status, line)  # type: ignore[return-value]
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"error": line}, status_code=status, headers=headers)


def _scrubbed(message: str, request: Request | None) -> str:
    """``message`` without the store's URL (either form), whatever raised it."""
    state = getattr(getattr(request, "app", None), "state", None) if request else None
    store = getattr(getattr(state, "greenml", None), "store", None)
    for url in (getattr(store, "_url", None), getattr(store, "url", None)):
        if url:
            message = message.replace(url, "the server's database")
    return message


def _wants_html(request: Request) -> bool:
    return not request.url.path.startswith("/api/") and "text/html" in request.headers.get(
        "accept", ""
    )


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413 (by header, and while reading)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            response = JSONResponse({"error": self._message()}, status_code=413)
            await response(scope, receive, send)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise RequestTooLarge(self._message())  # answered 413 by the app
            return message

        await self.app(scope, limited, send)

    def _message(self) -> str:
        return f"request body is larger than the server's limit of {self.limit} bytes"

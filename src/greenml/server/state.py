"""What every request handler shares (the store, sessions, settings), and a request's scope."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace

from starlette.requests import Request

from greenml.server.auth import Scope, Sessions, request_token, scope_for
from greenml.store.repository import Store

MAX_BODY_BYTES = 256 * 1024 * 1024
"""Default upload limit: an hour at 10 Hz on 8 GPUs is about 40 MB of JSON."""
UPLOADS_AT_ONCE = 2
"""Uploads read and parsed at the same time (a parsed body takes ~6x its size in memory)."""


@dataclass
class ServerState:
    """The app's shared state (``app.state.greenml``)."""

    store: Store
    public_read: bool = False
    max_body_bytes: int = MAX_BODY_BYTES
    sessions: Sessions = field(default_factory=Sessions)
    upload_slots: asyncio.Semaphore = field(
        default_factory=lambda: asyncio.Semaphore(UPLOADS_AT_ONCE)
    )


def state_of(request: Request) -> ServerState:
    """The server state of a request's app."""
    found: ServerState = request.app.state.greenml
    return found


def scope(request: Request, role: str, project: str | None = None) -> Scope:
    """The scope of a request needing ``role`` (see :func:`greenml.server.auth.scope_for`)."""
    state = state_of(request)
    token, csrf = request_token(request, state.sessions)
    if token is None and project is None and state.public_read:
        project = request.query_params.get("project")  # an anonymous reader names the project
    found = scope_for(state.store, token, role, project, public_read=state.public_read)
    return replace(found, csrf=csrf) if csrf else found

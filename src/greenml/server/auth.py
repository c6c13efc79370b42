"""Who is asking, and for which project: bearer tokens, browser sessions, project scope.

A request is granted by ``Authorization: Bearer gml_…`` or, in a browser, by
the session cookie set when signing in with a token. Sessions live in this
process's memory (a restart signs everyone out) and hold the token, which is
checked again on every request (a revoked token ends its sessions).

A grant is for one project: asking for another project answers 403 whether it
exists or not, so a token never learns which other projects there are.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from greenml.errors import AccessDenied, ProjectNotFound
from greenml.store import access

if TYPE_CHECKING:
    from starlette.requests import Request

    from greenml.store.repository import Store

SESSION_COOKIE = "greenml_session"
SESSION_TTL_S = 12 * 3600


@dataclass(frozen=True)
class Scope:
    """The project a request works on, and what it may do there."""

    project_id: int
    project: str
    role: str  # "read" for an anonymous reader with --public-read


class Sessions:
    """Browser sessions: a random id → (token, expiry), in memory."""

    def __init__(self) -> None:
        self._items: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def open(self, token: str) -> str:
        sid = secrets.token_urlsafe(32)
        with self._lock:
            now = time.time()
            self._items = {k: v for k, v in self._items.items() if v[1] > now}
            self._items[sid] = (token, now + SESSION_TTL_S)
        return sid

    def token(self, sid: str) -> str | None:
        with self._lock:
            found = self._items.get(sid)
        if found is None or found[1] < time.time():
            return None
        return found[0]

    def close(self, sid: str) -> None:
        with self._lock:
            self._items.pop(sid, None)


def request_token(request: Request, sessions: Sessions) -> str | None:
    """The token of a request: its bearer header, else its session's."""
    header = request.headers.get("authorization", "")
    if header:
        kind, _, value = header.partition(" ")
        if kind.lower() != "bearer" or not value.strip():
            raise AccessDenied("the Authorization header must be 'Bearer <token>'")
        return value.strip()
    sid = request.cookies.get(SESSION_COOKIE)
    return sessions.token(sid) if sid else None


def scope_for(
    store: Store, token: str | None, role: str, project: str | None, *, public_read: bool
) -> Scope:
    """The scope of a request that needs ``role`` on ``project`` (None: the token's own).

    Raises:
        AccessDenied: No token (401), a bad one (401), another project's (403), or too
            weak a role (403).
        ProjectNotFound: An anonymous public reader named an unknown project.
    """
    if token is None:
        if not (public_read and role == "read"):
            raise AccessDenied("sign in: this needs a token (Authorization: Bearer gml_…)")
        if not project:
            raise AccessDenied("name a project (?project=…) or sign in with a token")
        found = access.project_id(store, project)
        if found is None:
            raise ProjectNotFound(f"unknown project {project!r}")
        return Scope(found, project, "read")
    grant = access.authenticate(store, token)
    if project is not None and project != grant.project:
        raise AccessDenied(f"this token is for project {grant.project!r}, not {project!r}", 403)
    if not grant.allows(role):
        raise AccessDenied(f"this token's role {grant.role!r} cannot {role}", 403)
    return Scope(grant.project_id, grant.project, grant.role)

"""Who is asking, and for which project: bearer tokens, browser sessions, project scope.

A request is granted by ``Authorization: Bearer gml_…`` or, in a browser, by
the session cookie set when signing in with a token. Sessions live in this
process's memory (a restart signs everyone out) and hold the token, which is
checked again on every request (a revoked token ends its sessions).

Against cross-site request forgery: the JSON API (``/api/…``) takes bearer
tokens only, never the cookie, and the cookie grants only reading pages
(GET, HEAD). The one form that acts on a session (sign out) carries the
session's CSRF token, and signing in or out from a page of another origin
(``Origin`` or ``Referer`` naming another host) is refused.

A grant is for one project: asking for another project answers 403 whether it
exists or not, so a token never learns which other projects there are.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

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
    csrf: str = ""  # the session's CSRF token when the request came with the session cookie


class Sessions:
    """Browser sessions: a random id → (token, expiry, CSRF token), in memory."""

    def __init__(self) -> None:
        self._items: dict[str, tuple[str, float, str]] = {}
        self._lock = threading.Lock()

    def open(self, token: str) -> str:
        sid = secrets.token_urlsafe(32)
        with self._lock:
            now = time.time()
            self._items = {k: v for k, v in self._items.items() if v[1] > now}
            self._items[sid] = (token, now + SESSION_TTL_S, secrets.token_urlsafe(32))
        return sid

    def token(self, sid: str) -> str | None:
        found = self._live(sid)
        return None if found is None else found[0]

    def csrf(self, sid: str) -> str | None:
        """The CSRF token of a live session (the dashboard's forms carry it)."""
        found = self._live(sid)
        return None if found is None else found[2]

    def check_csrf(self, sid: str, sent: str) -> bool:
        """Whether ``sent`` is the CSRF token of the live session ``sid``."""
        expected = self.csrf(sid)
        return expected is not None and hmac.compare_digest(expected.encode(), sent.encode())

    def _live(self, sid: str) -> tuple[str, float, str] | None:
        with self._lock:
            found = self._items.get(sid)
        if found is None or found[1] < time.time():
            return None
        return found

    def close(self, sid: str) -> None:
        with self._lock:
            self._items.pop(sid, None)


def request_token(request: Request, sessions: Sessions) -> tuple[str | None, str]:
    """(token, CSRF token) of a request: its bearer header, else its session's.

    The session cookie counts only for reading dashboard pages: never on ``/api/``
    (the API takes bearer tokens only) and never on a method that changes anything,
    so a page of another site cannot act with a signed-in browser's cookie.
    """
    header = request.headers.get("authorization", "")
    if header:
        kind, _, value = header.partition(" ")
        if kind.lower() != "bearer" or not value.strip():
            raise AccessDenied("the Authorization header must be 'Bearer <token>'")
        return value.strip(), ""
    sid = request.cookies.get(SESSION_COOKIE)
    if not sid or not cookie_allowed(request):
        return None, ""
    return sessions.token(sid), sessions.csrf(sid) or ""


def cookie_allowed(request: Request) -> bool:
    """Whether the session cookie may grant this request: a dashboard page being read."""
    return request.method in ("GET", "HEAD") and not request.url.path.startswith("/api/")


def same_origin(request: Request) -> bool:
    """Whether a browser's ``Origin`` (else ``Referer``) names this server's host, or none is sent.

    Clients other than browsers send neither; a browser sends ``Origin`` on every POST.
    """
    origin = request.headers.get("origin") or request.headers.get("referer")
    if origin is None:
        return True
    host = request.headers.get("x-forwarded-host") or request.headers.get("host") or ""
    return bool(host) and urlsplit(origin).netloc.lower() == host.split(",")[0].strip().lower()


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

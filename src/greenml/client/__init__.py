"""The one client of a team server: every upload and every read command goes through it.

:class:`TeamClient` sends the token (``Authorization: Bearer …``), waits at most
:data:`TIMEOUT_S` (:data:`CONNECT_TIMEOUT_S` to connect), and turns every failure
into one line with one of four reasons (:func:`reason_for`)::

    server down     unreachable, a timeout, a 5xx or a 429: try again later
    auth refused    no token, 401, 403: the token is missing, unknown or not allowed
    not found       404: no such run, job or project
    bad data        any other 4xx, or an answer this greenml cannot read

Lazy imports: httpx, only when a server is asked.
"""

from __future__ import annotations

from greenml.client.team import (
    AUTH_REFUSED,
    BAD_DATA,
    CONNECT_TIMEOUT_S,
    NOT_FOUND,
    SERVER_DOWN,
    TIMEOUT_S,
    TeamClient,
    reason_for,
)

__all__ = [
    "AUTH_REFUSED", "BAD_DATA", "CONNECT_TIMEOUT_S", "NOT_FOUND", "SERVER_DOWN", "TIMEOUT_S",
    "TeamClient", "reason_for",
]  # fmt: skip

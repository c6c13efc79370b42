"""EnergyMiddleware: a pure ASGI middleware that records each HTTP request's interval.

It imports neither Starlette nor FastAPI and works with both (and any ASGI
app): ``app.add_middleware(EnergyMiddleware, request_meter=rm)`` or
``EnergyMiddleware(app, rm)``. It changes nothing in the response: a
request's energy is only known after its end, once power samples cover it,
so no header can carry it. Requests are labelled ``METHOD /route/{template}``
from the route the router matched (``scope["route"]``, set by Starlette and
FastAPI), never from the raw path, which would make one label per URL.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from greenml.serve.requests import RequestMeter

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

UNMATCHED = "<unmatched>"


def route_label(scope: Scope) -> str:
    """``GET /items/{item_id}`` from the matched route, ``GET <unmatched>`` without one."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if not isinstance(path, str):
        path = getattr(route, "path_format", None)
    if not isinstance(path, str) or not path:
        path = UNMATCHED
    return f"{scope.get('method', 'GET')} {path}"


class EnergyMiddleware:
    """Wraps an ASGI app; each HTTP request becomes one interval of a RequestMeter.

    Args:
        app: The ASGI application.
        request_meter: Where the intervals go.
        label: ``scope → route label``; default :func:`route_label`.
        websockets: Also record websocket sessions (off: a long-lived session
            would take a share of every request's power for hours).
    """

    def __init__(
        self,
        app: ASGIApp,
        request_meter: RequestMeter,
        *,
        label: Callable[[Scope], str] = route_label,
        websockets: bool = False,
    ) -> None:
        self.app = app
        self.request_meter = request_meter
        self._label = label
        self._types = ("http", "websocket") if websockets else ("http",)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in self._types:
            await self.app(scope, receive, send)
            return
        meter = self.request_meter
        token = meter.begin()
        try:
            await self.app(scope, receive, send)
        finally:
            meter.finish(token, self._label(scope))

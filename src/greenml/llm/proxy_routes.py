"""The proxy's own routes: ``/greenml/ledger``, ``/greenml/requests/ID`` and the reports of
an engine's other nodes (``POST /greenml/nodes/NAME``)."""

from __future__ import annotations

import hmac
import json
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError
from greenml.llm.asgi_io import Receive, Scope, Send, error, header, read_body, respond, send_all
from greenml.llm.nodes import CompositeSource
from greenml.llm.usage import parse_json

if TYPE_CHECKING:
    from greenml.llm.proxy_app import ProxyApp

NODES_PREFIX = "/greenml/nodes/"
NODE_REPORT_LIMIT = 64 * 1024


async def status(app: ProxyApp, path: str, send: Send) -> None:
    """``GET /greenml/ledger`` (totals, ratio, floor, nodes) and ``/greenml/requests/ID``."""
    if path == "/greenml/ledger":
        t = app.ledger.totals
        ratio = app.ledger.ratio.current()
        doc: dict[str, Any] = {
            "metered_j": t.metered_j, "attributed_j": t.attributed_j, "idle_j": t.idle_j,
            "pending_j": t.pending_j, "in_flight": app.ledger.in_flight,
            "unsettled_intervals": app.ledger.unsettled_intervals,
            "method": app.source.method, "scope": app.source.scope,
            "ratio": {"estimate": ratio.estimate, "spread": ratio.spread,
                      "intervals": ratio.intervals, "source": ratio.source},
            "unattributed_share": app.unattributed.shares(),
            "carbon": app.carbon.description,
            "idle_floor_w": app.ledger.floor.floor_w,
        }  # fmt: skip
        if isinstance(app.source, CompositeSource):
            doc["nodes"] = app.source.nodes.status()
        await respond(send, 200, json.dumps(doc).encode())
        return
    prefix = "/greenml/requests/"
    if path.startswith(prefix) and path[len(prefix) :] in app.settled:
        await respond(send, 200, json.dumps(app.settled[path[len(prefix) :]]).encode())
        return
    await respond(send, 404, error("not found (or not settled yet)", "not_found"))


async def node_report(app: ProxyApp, scope: Scope, receive: Receive, send: Send) -> None:
    """``POST /greenml/nodes/NAME``: another node's running total (``greenml llm node``)."""
    if not isinstance(app.source, CompositeSource) or not app.config.node_token:
        await respond(send, 404, error("this proxy takes no node reports", "not_found"))
        return
    given = (header(scope, b"authorization") or "").removeprefix("Bearer ").strip()
    if not hmac.compare_digest(given.encode(), app.config.node_token.encode()):
        await respond(send, 401, error("wrong or missing node token", "unauthorized"))
        return
    body = await read_body(receive, NODE_REPORT_LIMIT)
    try:
        if body is None:
            raise ConfigError("a node report is at most 64 KiB")
        app.source.nodes.report(scope["path"][len(NODES_PREFIX) :], parse_json(body))
    except ConfigError as exc:
        await respond(send, 422, error(str(exc), "invalid_report"))
        return
    await send_all(send, 204, [], b"")

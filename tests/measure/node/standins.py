"""Local HTTP stand-ins that answer as a Shelly Gen2 plug and a Tasmota plug do (per their docs).

Each serves only its device's documented path and answers anything else with 404,
so a client that asks the wrong URL fails here as it would on the real plug.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


class Plug:
    """What the plug measures now: watts, and the energy counter it keeps (Wh)."""

    def __init__(self, watts: float) -> None:
        self.watts = watts
        self.total_wh = 1000.0
        self.requests: list[str] = []

    def shelly(self, switch: int) -> dict[str, Any]:
        # Shelly Gen2 API, Switch.GetStatus (shelly-api-docs.shelly.cloud)
        return {"id": switch, "source": "init", "output": True, "apower": self.watts,
                "voltage": 229.8, "current": round(self.watts / 229.8, 3),
                "aenergy": {"total": self.total_wh, "by_minute": [0.0, 0.0, 0.0],
                            "minute_ts": 1764331200},
                "temperature": {"tC": 41.2, "tF": 106.2}}  # fmt: skip

    def tasmota(self) -> dict[str, Any]:
        # Tasmota, Status 8 (tasmota.github.io/docs/Commands/#management)
        return {"StatusSNS": {"Time": "2026-11-28T12:00:00", "ENERGY": {
            "TotalStartTime": "2026-01-01T00:00:00", "Total": self.total_wh / 1000,
            "Yesterday": 1.2, "Today": 0.4, "Power": self.watts, "ApparentPower": self.watts,
            "ReactivePower": 0, "Factor": 1.0, "Voltage": 230, "Current": 0.1}}}  # fmt: skip


def _handler(plug: Plug, kind: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            plug.requests.append(self.path)
            url = urlsplit(self.path)
            query = parse_qs(url.query)
            body: Any = None
            if kind == "shelly" and url.path == "/rpc/Switch.GetStatus" and "id" in query:
                body = plug.shelly(int(query["id"][0]))
            elif kind == "tasmota" and url.path == "/cm" and query.get("cmnd") == ["Status 8"]:
                body = plug.tasmota()
            elif kind == "json" and url.path == "/power":
                body = {"node": {"input_watts": plug.watts}}
            if body is None:
                self.send_error(404)
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def serve(plug: Plug, kind: str) -> Iterator[str]:
    """``host:port`` of a stand-in of ``kind`` (``shelly``, ``tasmota``, ``json``) for ``plug``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(plug, kind))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()

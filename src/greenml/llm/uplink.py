"""Send a proxy's per-minute figures to the team server, for the project's serving page.

Every ``every_s`` the thread drains the :class:`~greenml.llm.minutes.MinuteRollup`
into a batch with an id of its own and posts it to ``/api/v1/serving`` (the
token's project). A batch the server did not take (unreachable, 5xx, 429) is
kept and sent again with the same id, so a lost answer never stores it twice;
at most ``max_pending`` batches wait (the oldest are dropped, counted and said
once). A batch the server refuses (4xx) is dropped with one warning. Nothing
on the request path waits: the ticker only adds to the rollup.

Lazy imports: httpx, in the thread.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections import deque
from typing import TYPE_CHECKING, Any

from greenml.llm.minutes import MinuteRollup

if TYPE_CHECKING:
    from greenml.run.server_settings import ServerSettings

log = logging.getLogger("greenml")
TIMEOUT_S = 10.0


class ServingUplink:
    """A background sender of minute rows to one team server.

    Args:
        settings: The server's URL and token.
        source: This proxy's name on the server (``host:port``), 64 characters at most.
        method: The energy source's method (counter, power-integrated, estimated).
        scope: What the energy covers, in words.
        every_s: Seconds between batches.
        max_pending: Batches kept while the server does not answer.
    """

    def __init__(
        self, settings: ServerSettings, source: str, method: str, scope: str, *,
        every_s: float = 30.0, max_pending: int = 240,
    ) -> None:  # fmt: skip
        self.settings = settings
        self.source = source[:64]
        self.method = method
        self.scope = scope[:500]
        self.rollup = MinuteRollup()
        self.sent = 0
        self.dropped = 0
        self._every_s = every_s
        self._pending: deque[dict[str, Any]] = deque(maxlen=max_pending)
        self._stop = threading.Event()
        self._warned = False
        self._thread = threading.Thread(target=self._run, name="greenml-llm-uplink", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """Send what is left (one try each) and stop."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=TIMEOUT_S * 2)
        self.flush()

    def _run(self) -> None:
        while not self._stop.wait(self._every_s):
            self.flush()

    def flush(self) -> None:
        """Batch what settled and send every waiting batch, oldest first; never raises."""
        rows = self.rollup.drain()
        if rows:
            if len(self._pending) == self._pending.maxlen:
                self.dropped += 1
                log.warning("greenml: the team server has not answered for a while: "
                            "the oldest serving figures waiting for it are dropped")  # fmt: skip
            batch = {"source": self.source, "batch": uuid.uuid4().hex, "method": self.method,
                     "scope": self.scope, "minutes": rows}  # fmt: skip
            self._pending.append(batch)
        while self._pending:
            outcome = self._send(self._pending[0])
            if outcome == "retry":
                return
            self._pending.popleft()
            self.sent += outcome == "stored"

    @property
    def waiting(self) -> int:
        return len(self._pending)

    def _send(self, batch: dict[str, Any]) -> str:
        import httpx

        body = json.dumps(batch, allow_nan=False, separators=(",", ":")).encode()
        try:
            response = httpx.post(
                f"{self.settings.url}/api/v1/serving", content=body, timeout=TIMEOUT_S,
                headers={"Authorization": f"Bearer {self.settings.token}",
                         "Content-Type": "application/json"},
            )  # fmt: skip
        except (httpx.HTTPError, OSError) as exc:
            self._warn(f"{self.settings.url} unreachable ({type(exc).__name__}); will retry")
            return "retry"
        if response.status_code in (200, 201):
            self._warned = False
            return "stored"
        if response.status_code >= 500 or response.status_code == 429:
            self._warn(f"{self.settings.url} answered {response.status_code}; will retry")
            return "retry"
        log.warning("greenml: the team server refused serving figures (%d): %s",
                    response.status_code, _reason(response))  # fmt: skip
        return "refused"

    def _warn(self, message: str) -> None:
        if not self._warned:  # once per outage
            self._warned = True
            log.warning("greenml: serving figures not sent: %s", message)


def _reason(response: Any) -> str:
    try:
        return str(response.json().get("error", ""))[:300]
    except (ValueError, AttributeError):
        return str(response.text)[:300]

"""``greenml llm node``: report this node's energy to the proxy of an engine that spans nodes.

Posts the running total of a Meter on this node (its GPUs, else the engine's
process tree, else the machine) to ``PROXY/greenml/nodes/NAME`` every
``every_s`` seconds. Totals are cumulative, so a report that does not arrive
loses nothing: the next one carries its energy. An unreachable proxy is said
once per outage.
"""

from __future__ import annotations

import logging
import threading

import httpx

from greenml.llm.meter_source import MeterSource

log = logging.getLogger("greenml")


class NodeReporter:
    """Sends ``source``'s total to the proxy until :meth:`stop`."""

    def __init__(
        self, source: MeterSource, proxy: str, name: str, token: str, every_s: float = 0.2
    ) -> None:
        self.source = source
        self.url = f"{proxy.rstrip('/')}/greenml/nodes/{name}"
        self._token = token
        self._every_s = every_s
        self._stop = threading.Event()
        self.sent = 0
        self.refused: str | None = None

    def run(self) -> None:
        """Report until stopped, or until the proxy refuses (wrong token, unknown node)."""
        down = False
        with httpx.Client(timeout=5.0, headers={"Authorization": f"Bearer {self._token}"}) as c:
            while not self._stop.wait(self._every_s):
                try:
                    answer = c.post(self.url, json=self._doc())
                except httpx.HTTPError as exc:
                    if not down:
                        log.warning("greenml: proxy %s unreachable (%s); retrying", self.url,
                                    type(exc).__name__)  # fmt: skip
                    down = True
                    continue
                down = False
                if answer.status_code == 204:
                    self.sent += 1
                elif answer.status_code in (401, 404, 422):
                    reason = answer.text[:300]
                    self.refused = f"the proxy refused the report ({answer.status_code}): {reason}"
                    return

    def _doc(self) -> dict[str, object]:
        s = self.source
        return {"total_j": s.total_j(), "method": s.method, "uncertainty_rel": s.uncertainty_rel,
                "scope": s.scope}  # fmt: skip

    def stop(self) -> None:
        self._stop.set()

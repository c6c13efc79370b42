"""An engine that spans nodes: the other nodes' energy, as their ``greenml llm node`` reports it.

A tensor- or pipeline-parallel engine serves each request on every node it spans,
so a request's energy must cover them all. Each other node runs
``greenml llm node --proxy URL --name NAME``: a Meter on that node's GPUs (else
the engine's process tree, else the machine) whose running total it posts to the
proxy several times a second. The proxy's energy source is then its own Meter
plus every node's total (:class:`CompositeSource`), shared out as one.

A node's first report sets its zero (energy before the proxy heard of it is not
counted); a total that goes backwards (the node agent restarted) starts a new
segment, so nothing counted is lost. A node that has not reported for
``silent_after_s`` is *silent*: its energy since its last report is missing, and
``/greenml/ledger`` names it — never a silent zero.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Any

from greenml.errors import ConfigError
from greenml.measure.measurement import weakest_method

METHODS = ("counter", "power-integrated", "estimated")


@dataclass
class _Node:
    name: str
    base_j: float | None = None  # its total at its first report (of this segment)
    last_j: float = 0.0
    banked_j: float = 0.0  # energy of earlier segments (before a restart)
    method: str | None = None
    uncertainty_rel: float = 0.0
    scope: str = ""
    seen_at: float | None = None  # monotonic

    @property
    def energy_j(self) -> float:
        return self.banked_j + (0.0 if self.base_j is None else self.last_j - self.base_j)


class RemoteNodes:
    """The latest running totals of the engine's other nodes.

    Args:
        expected: The nodes' names (``--node``); reports from others are refused.
        silent_after_s: Seconds without a report after which a node counts as silent.
    """

    def __init__(self, expected: list[str], silent_after_s: float = 5.0) -> None:
        if not expected:
            raise ConfigError("name at least one node")
        self._nodes = {name: _Node(name) for name in expected}
        self._silent_after_s = silent_after_s
        self._lock = threading.Lock()

    def report(self, name: str, doc: Any, now: float | None = None) -> None:
        """A node's report ``{"total_j", "method", "uncertainty_rel", "scope"}``.

        Raises:
            ConfigError: An unknown node, or a report that is not one.
        """
        node = self._nodes.get(name)
        if node is None:
            raise ConfigError(f"unknown node {name[:64]!r}: the proxy was given no such --node")
        total, method, rel, scope = _fields(doc)
        with self._lock:
            if node.base_j is None:
                node.base_j = total
            elif total < node.last_j:  # its agent restarted: a new segment
                node.banked_j = node.energy_j
                node.base_j = total
            node.last_j = total
            node.method, node.uncertainty_rel, node.scope = method, rel, scope
            node.seen_at = time.monotonic() if now is None else now

    def total_j(self) -> float:
        """Joules all nodes drew since each first reported."""
        with self._lock:
            return sum(n.energy_j for n in self._nodes.values())

    def methods(self) -> list[str]:
        with self._lock:
            return [n.method for n in self._nodes.values() if n.method is not None]

    def uncertainty_rel(self) -> float:
        with self._lock:
            return max((n.uncertainty_rel for n in self._nodes.values()), default=0.0)

    def status(self, now: float | None = None) -> dict[str, dict[str, Any]]:
        """Per node: its energy, how long ago it reported, whether it is silent, what it reads."""
        at = time.monotonic() if now is None else now
        with self._lock:
            return {
                n.name: {
                    "energy_j": n.energy_j,
                    "seconds_since_report": None if n.seen_at is None else at - n.seen_at,
                    "silent": n.seen_at is None or at - n.seen_at > self._silent_after_s,
                    "method": n.method,
                    "scope": n.scope,
                }
                for n in self._nodes.values()
            }

    @property
    def names(self) -> list[str]:
        return list(self._nodes)


def _fields(doc: Any) -> tuple[float, str, float, str]:
    if not isinstance(doc, dict):
        raise ConfigError("a node report is a JSON object")
    total, method = doc.get("total_j"), doc.get("method")
    rel, scope = doc.get("uncertainty_rel", 0.0), doc.get("scope", "")
    if isinstance(total, bool) or not isinstance(total, int | float) or not (
        math.isfinite(total) and 0 <= total < 1e18
    ):
        raise ConfigError("total_j must be a finite number >= 0")
    if method not in METHODS:
        raise ConfigError(f"method must be one of {', '.join(METHODS)}")
    if isinstance(rel, bool) or not isinstance(rel, int | float) or not 0 <= rel <= 10:
        raise ConfigError("uncertainty_rel must be a number in [0, 10]")
    if not isinstance(scope, str) or len(scope) > 500:
        raise ConfigError("scope must be text of at most 500 characters")
    return float(total), str(method), float(rel), scope


class CompositeSource:
    """This node's energy source plus the other nodes' reported totals (one running total)."""

    def __init__(self, local: Any, nodes: RemoteNodes) -> None:
        self.local = local
        self.nodes = nodes

    @property
    def method(self) -> str:
        return weakest_method([self.local.method, *self.nodes.methods()])

    @property
    def uncertainty_rel(self) -> float:
        return max(float(self.local.uncertainty_rel), self.nodes.uncertainty_rel())

    @property
    def scope(self) -> str:
        return f"{self.local.scope}; and nodes {', '.join(self.nodes.names)} (greenml llm node)"

    def total_j(self) -> float:
        return float(self.local.total_j()) + self.nodes.total_j()

    def close(self) -> None:
        self.local.close()

"""Settled requests and idle stretches summed per UTC minute, model and tenant.

What a proxy sends its team server: never a prompt, a request id or a timing
of one request, only sums. A request counts in the minute it ended; an idle
stretch in the minute it ended (stretches are one tick long). Every joule
added comes out of :meth:`MinuteRollup.drain` exactly once.
"""

from __future__ import annotations

import math
import threading
from typing import Any

from greenml.llm.inflight import CANCELLED, ERROR

Key = tuple[float, str, str]  # minute start (Unix s), model, tenant
FIELDS = (
    "requests", "cancelled", "errors", "prompt_tokens", "completion_tokens",
    "energy_j", "uncertainty_j", "prefill_j", "decode_j", "idle_j",
)  # fmt: skip


def minute_of(unix_s: float) -> float:
    """The start of the UTC minute that holds ``unix_s``."""
    return float(math.floor(unix_s / 60.0) * 60)


class MinuteRollup:
    """Sums of settled rows (:func:`greenml.llm.records.request_row`) per minute, model, tenant.

    Thread-safe: the ticker adds, the uplink drains.
    """

    def __init__(self) -> None:
        self._buckets: dict[Key, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def add_request(self, row: dict[str, Any]) -> None:
        """A settled request's row."""
        key = (minute_of(row["ended_at"]), row.get("model") or "", row.get("tenant") or "")
        with self._lock:
            b = self._bucket(key)
            b["requests"] += 1
            b["cancelled"] += row["status"] == CANCELLED
            b["errors"] += row["status"] == ERROR
            b["prompt_tokens"] += row.get("prompt_tokens") or 0
            b["completion_tokens"] += row.get("completion_tokens") or 0
            for name in ("energy_j", "prefill_j", "decode_j"):
                b[name] += row[name]
            b["uncertainty_j"] += row["uncertainty_j"]  # one sensor: errors add linearly
            if row.get("co2eq_g") is not None:
                b["co2eq_g"] = (b["co2eq_g"] or 0.0) + row["co2eq_g"]

    def add_idle(self, end_s: float, energy_j: float, co2eq_g: float | None = None) -> None:
        """An idle stretch that ended at ``end_s`` (Unix s)."""
        with self._lock:
            b = self._bucket((minute_of(end_s), "", ""))
            b["idle_j"] += energy_j
            if co2eq_g is not None:
                b["co2eq_g"] = (b["co2eq_g"] or 0.0) + co2eq_g

    def drain(self) -> list[dict[str, Any]]:
        """Everything added since the last drain, one row per key (oldest minute first)."""
        with self._lock:
            buckets, self._buckets = self._buckets, {}
        return [buckets[k] for k in sorted(buckets)]

    def _bucket(self, key: Key) -> dict[str, Any]:
        found = self._buckets.get(key)
        if found is None:
            found = {"minute": key[0], "model": key[1], "tenant": key[2], "co2eq_g": None}
            found.update(dict.fromkeys(FIELDS, 0))
            for name in FIELDS[5:]:
                found[name] = 0.0
            self._buckets[key] = found
        return found

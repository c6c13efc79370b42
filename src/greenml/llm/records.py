"""Settled requests as rows of the store's ``llm_requests`` table, written in batches.

The ticker thread hands each settled request (and each idle stretch) to
:class:`RecordWriter`, which queues them and writes one transaction every
``flush_s`` seconds from its own thread, and deletes rows older than the
retention once an hour. Nothing on the request path touches the database.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from greenml.llm.inflight import Request, uncertainty_j

if TYPE_CHECKING:
    from greenml.llm.carbon import HourlyIntensity
    from greenml.store.repository import Store

log = logging.getLogger("greenml")

IDLE = "idle"


def request_row(
    req: Request, wall_offset: float, device_rel: float, method: str, carbon: HourlyIntensity
) -> dict[str, Any]:
    """The row of one settled request."""
    end = (req.end_s if req.end_s is not None else req.arrival_s) + wall_offset
    co2, intensity = carbon.co2eq_g(req.energy_j, end)
    ttft = None if req.first_token_s is None else req.first_token_s - req.arrival_s
    return {
        "request_id": req.id,
        "started_at": req.wall_s,
        "ended_at": end,
        "status": req.status,
        "endpoint": req.endpoint,
        "model": req.model,
        "tenant": req.tenant,
        "stream": int(req.stream),
        "prompt_tokens": req.prompt_tokens,
        "completion_tokens": req.completion_tokens,
        "token_source": req.token_source,
        "ttft_s": ttft,
        "energy_j": req.energy_j,
        "uncertainty_j": uncertainty_j(req, device_rel),
        "prefill_j": req.prefill_j,
        "decode_j": req.decode_j,
        "provisional_j": req.response_j,
        "co2eq_g": co2,
        "intensity_g_per_kwh": intensity,
        "method": method,
        "ratio": req.ratio,
        "ratio_spread": req.ratio_spread,
        "extra": json.dumps({"queued_j": req.queued_j, "attribution_j": req.attribution_j,
                             "static_j": req.static_j, "dynamic_j": req.dynamic_j}),
    }


def idle_row(start_s: float, end_s: float, energy_j: float, method: str) -> dict[str, Any]:
    """A stretch with nothing in flight (merged per flush by :class:`RecordWriter`)."""
    return {
        "request_id": IDLE, "started_at": start_s, "ended_at": end_s, "status": IDLE,
        "endpoint": "", "model": None, "tenant": None, "stream": 0, "prompt_tokens": None,
        "completion_tokens": None, "token_source": None, "ttft_s": None, "energy_j": energy_j,
        "uncertainty_j": 0.0, "prefill_j": 0.0, "decode_j": 0.0, "provisional_j": None,
        "co2eq_g": None, "intensity_g_per_kwh": None, "method": method, "ratio": None,
        "ratio_spread": None, "extra": "{}",
    }  # fmt: skip


class RecordWriter:
    """Batched inserts into ``llm_requests`` from a background thread.

    Args:
        store: The run store (closed with this writer).
        flush_s: Seconds between writes.
        retention_days: Rows older than this are deleted (hourly); None keeps all.
    """

    def __init__(
        self, store: Store, *, flush_s: float = 2.0, retention_days: float | None = None
    ) -> None:
        self.store = store
        self._flush_s = flush_s
        self._retention_s = None if retention_days is None else retention_days * 86400.0
        self._queue: list[dict[str, Any]] = []
        self._idle: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._pruned_at = 0.0
        self.written = 0
        self._thread = threading.Thread(target=self._run, name="greenml-llm-store", daemon=True)
        self._thread.start()

    def add(self, row: dict[str, Any]) -> None:
        with self._lock:
            self._queue.append(row)

    def add_idle(self, row: dict[str, Any]) -> None:
        with self._lock:  # one idle row per flush: merged with the one pending
            if self._idle is None:
                self._idle = row
            else:
                self._idle["energy_j"] += row["energy_j"]
                self._idle["ended_at"] = row["ended_at"]

    def _run(self) -> None:
        while not self._stop.wait(self._flush_s):
            self.flush()

    def flush(self) -> None:
        from greenml.store.schema import llm_requests

        with self._lock:
            rows, self._queue = self._queue, []
            if self._idle is not None:
                rows.append(self._idle)
                self._idle = None
        now = time.time()
        prune = self._retention_s is not None and now - self._pruned_at > 3600
        if not rows and not prune:
            return
        try:
            with self.store.writing("store LLM requests in") as conn:
                if rows:
                    conn.execute(llm_requests.insert(), rows)
                if prune and self._retention_s is not None:
                    cut = now - self._retention_s
                    conn.execute(llm_requests.delete().where(llm_requests.c.ended_at < cut))
                    self._pruned_at = now
            self.written += len(rows)
        except Exception as exc:  # the store being down never stops the proxy
            log.warning("greenml: %d LLM request records not stored: %s", len(rows), exc)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.flush()
        self.store.close()


def read_rows(
    store: Store,
    *,
    model: str | None = None,
    tenant: str | None = None,
    since_s: float | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(request rows, idle rows) of the store, filtered; idle rows ignore model and tenant."""
    from sqlalchemy import select

    from greenml.store.schema import llm_requests as t

    query = select(t).where(t.c.status != IDLE)
    idle = select(t).where(t.c.status == IDLE)
    if model is not None:
        query = query.where(t.c.model == model)
    if tenant is not None:
        query = query.where(t.c.tenant == tenant)
    if since_s is not None:
        query = query.where(t.c.started_at >= since_s)
        idle = idle.where(t.c.started_at >= since_s)
    with store.reading("read LLM requests from") as conn:
        rows = [dict(r._mapping) for r in conn.execute(query.order_by(t.c.started_at))]
        idles = [dict(r._mapping) for r in conn.execute(idle)]
    return rows, idles

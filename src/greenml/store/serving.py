"""A team server's LLM serving figures: per-minute aggregates that proxies upload.

Each ``greenml llm proxy`` with a team server sends, every half minute, what
settled since its last batch: per UTC minute, model and tenant, the requests,
tokens and attributed energy (prefill and decode apart), and the idle energy
(model and tenant ``""``). A batch is stored once: sent again after a lost
answer, it writes nothing (``(project, source, batch, minute, model, tenant)``
is unique). Reads sum over proxies and batches.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from greenml.errors import StoreError
from greenml.store.schema import llm_serving

if TYPE_CHECKING:
    from greenml.store.repository import Store

COUNTS = ("requests", "cancelled", "errors", "prompt_tokens", "completion_tokens")
ENERGIES = ("energy_j", "uncertainty_j", "prefill_j", "decode_j", "idle_j")


@dataclass(frozen=True)
class Batch:
    """One upload of a proxy: who sent it, its id, and its minute rows."""

    source: str
    batch: str
    method: str
    rows: Sequence[dict[str, Any]]


def add_batch(store: Store, project_id: int, batch: Batch) -> bool:
    """Store a batch's rows; False when this batch was stored before (nothing written)."""
    values = [
        {"project_id": project_id, "source": batch.source, "batch": batch.batch,
         "method": batch.method, **row}
        for row in batch.rows
    ]  # fmt: skip
    c = llm_serving.c
    try:
        with store.writing("store LLM serving figures in") as conn:
            seen = conn.execute(
                select(func.count()).where(
                    c.project_id == project_id, c.source == batch.source, c.batch == batch.batch
                )
            ).scalar_one()
            if seen:
                return False
            if values:
                conn.execute(llm_serving.insert(), values)
    except StoreError as exc:  # a retry racing its first send: the unique key held
        if isinstance(exc.__cause__, IntegrityError):
            return False
        raise
    return True


def minutes(
    store: Store, project_id: int, since: float | None = None, until: float | None = None
) -> list[dict[str, Any]]:
    """Per-minute sums over every proxy of the project (all models and tenants)."""
    c = llm_serving.c
    sums = [func.sum(getattr(c, k)).label(k) for k in (*COUNTS, *ENERGIES)]
    query = (
        select(c.minute, *sums, func.sum(c.co2eq_g).label("co2eq_g"),
               func.count(c.co2eq_g).label("co2_known_rows"), func.count().label("rows"))
        .where(c.project_id == project_id)
        .group_by(c.minute)
        .order_by(c.minute)
    )  # fmt: skip
    query = _between(query, since, until)
    with store.reading("read LLM serving figures from") as conn:
        return [_plain(dict(r)) for r in conn.execute(query).mappings()]


def by(
    store: Store, project_id: int, column: str, since: float | None = None,
    until: float | None = None, limit: int = 10,
) -> list[dict[str, Any]]:  # fmt: skip
    """Sums per ``model`` or ``tenant`` (idle rows left out), the most energy first."""
    c = llm_serving.c
    key = getattr(c, column)
    sums = [func.sum(getattr(c, k)).label(k) for k in (*COUNTS, *ENERGIES)]
    query = (
        select(key.label("key"), *sums, func.sum(c.co2eq_g).label("co2eq_g"))
        .where(c.project_id == project_id, c.requests > 0)
        .group_by(key)
        .order_by(func.sum(c.energy_j).desc())
        .limit(limit)
    )  # fmt: skip
    query = _between(query, since, until)
    with store.reading("read LLM serving figures from") as conn:
        return [_plain(dict(r)) for r in conn.execute(query).mappings()]


def latest_minute(store: Store, project_id: int) -> float | None:
    """The newest minute a proxy of the project sent, or None."""
    c = llm_serving.c
    with store.reading("read LLM serving figures from") as conn:
        found = conn.execute(select(func.max(c.minute)).where(c.project_id == project_id))
        value = found.scalar_one_or_none()
    return None if value is None else float(value)


def methods(store: Store, project_id: int) -> list[str]:
    """The energy methods the project's proxies measured with (counter, estimated …)."""
    c = llm_serving.c
    with store.reading("read LLM serving figures from") as conn:
        found = conn.execute(select(c.method).where(c.project_id == project_id).distinct())
        return sorted(str(m) for m in found.scalars())


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Totals and per-token figures of minute (or model/tenant) rows.

    J per prompt token is prefill energy over prompt tokens, J per output token
    decode energy over completion tokens; the idle share is idle energy over all
    metered energy (attributed + idle).
    """
    total = {k: sum(r.get(k) or 0 for r in rows) for k in (*COUNTS, *ENERGIES)}
    total["uncertainty_j"] = sum(r.get("uncertainty_j") or 0.0 for r in rows)  # shared sensor
    known = [r.get("co2eq_g") for r in rows if r.get("co2eq_g") is not None]
    metered = total["energy_j"] + total["idle_j"]
    return {
        **total,
        "metered_j": metered,
        "co2eq_g": sum(known) if known else None,
        "j_per_prompt_token": _ratio(total["prefill_j"], total["prompt_tokens"]),
        "j_per_output_token": _ratio(total["decode_j"], total["completion_tokens"]),
        "j_per_request": _ratio(total["energy_j"], total["requests"]),
        "idle_share": _ratio(total["idle_j"], metered),
    }


def _ratio(a: float, b: float) -> float | None:
    return a / b if b and math.isfinite(a / b) else None


def _between(query: Any, since: float | None, until: float | None) -> Any:
    if since is not None:
        query = query.where(llm_serving.c.minute >= since)
    if until is not None:
        query = query.where(llm_serving.c.minute < until)
    return query


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    """Database numbers as ints and floats (PostgreSQL's SUM of a BIGINT is a Decimal)."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if key in COUNTS or key in ("rows", "co2_known_rows"):
            out[key] = int(value or 0)
        elif key in ENERGIES or key in ("minute", "co2eq_g"):
            out[key] = None if value is None else float(value)
        else:
            out[key] = value
    return out

"""Queries of a team server: runs of a project by filter, one page at a time, and
a project's totals per day, week or month.

Every filter is SQL over indexed columns (``runs.project_id, started_at``, the
``run_tags`` index, ``run_uploads.user``); pages follow a cursor on
``(started_at, id)`` rather than an offset, so page 1,000 costs what page 1 does.
"""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, func, literal_column, or_, select

from greenml.errors import ConfigError
from greenml.store import record as rec
from greenml.store.schema import RUN_STATUSES, run_tags, run_uploads, runs

if TYPE_CHECKING:
    from greenml.store.repository import Store

PERIODS = ("day", "week", "month")
MAX_PAGE = 500
_MONDAY_OFFSET_S = 4 * 86400  # 1970-01-01 was a Thursday: weeks start on Mondays


@dataclass
class RunFilter:
    """What :func:`find_runs` keeps (every given field must match)."""

    project_id: int | None = None
    name: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    status: str | None = None
    user: str | None = None
    since: float | None = None
    until: float | None = None

    def __post_init__(self) -> None:
        if self.status is not None and self.status not in RUN_STATUSES:
            raise ConfigError(f"status must be one of {', '.join(RUN_STATUSES)}")


def encode_cursor(started_at: float, run_id: str) -> str:
    """The opaque cursor after a run."""
    raw = json.dumps([started_at, run_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[float, str]:
    """(started_at, id) of a cursor.

    Raises:
        ConfigError: It is not one this server made.
    """
    try:
        t, run_id = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        return float(t), str(run_id)
    except (ValueError, TypeError):
        raise ConfigError("invalid cursor") from None


def filtered(query: Any, where: RunFilter) -> Any:
    """``query`` (over runs ⟕ run_uploads) kept to the runs ``where`` names."""
    if where.project_id is not None:
        query = query.where(runs.c.project_id == where.project_id)
    if where.name is not None:
        query = query.where(runs.c.name == where.name)
    for key, value in where.tags.items():
        query = query.where(runs.c.id.in_(
            select(run_tags.c.run_id).where(run_tags.c.key == key, run_tags.c.value == value)
        ))  # fmt: skip
    if where.status is not None:
        query = query.where(runs.c.status == where.status)
    if where.user is not None:
        query = query.where(run_uploads.c.user == where.user)
    if where.since is not None:
        query = query.where(runs.c.started_at >= where.since)
    if where.until is not None:
        query = query.where(runs.c.started_at < where.until)
    return query


def find_runs(
    store: Store, where: RunFilter, *, limit: int = 50, cursor: str | None = None
) -> tuple[list[dict[str, Any]], str | None]:
    """One page of run summaries, newest first, and the cursor of the next page (or None).

    Summaries are :func:`greenml.store.record.summary` plus ``project``-side totals
    (``energy_j``, ``co2_g``, ``cost_usd`` with uncertainties, ``user``) when uploaded.
    """
    if not 1 <= limit <= MAX_PAGE:
        raise ConfigError(f"limit must be between 1 and {MAX_PAGE}")
    query = filtered(select(runs, *_upload_columns()).select_from(
        runs.outerjoin(run_uploads, run_uploads.c.run_id == runs.c.id)
    ), where)
    if cursor:
        t, run_id = decode_cursor(cursor)
        query = query.where(or_(
            runs.c.started_at < t, and_(runs.c.started_at == t, runs.c.id > run_id)
        ))  # fmt: skip
    query = query.order_by(runs.c.started_at.desc(), runs.c.id).limit(limit + 1)
    now = time.time()
    with store.reading("list runs in") as conn:
        rows = list(conn.execute(query).mappings())
    out = []
    for row in rows[:limit]:
        item = rec.summary(row, now=now, hostname="")
        item.update({name: row[name] for name in _UPLOAD_FIELDS})
        out.append(item)
    more = len(rows) > limit
    last = rows[limit - 1] if more else None
    return out, encode_cursor(float(last["started_at"]), str(last["id"])) if last else None


_UPLOAD_FIELDS = (
    "user", "energy_j", "energy_uncertainty_j", "measured_j", "co2_g", "co2_uncertainty_g",
    "cost_usd", "cost_uncertainty_usd",
)  # fmt: skip


def _upload_columns() -> list[Any]:
    return [run_uploads.c[name] for name in _UPLOAD_FIELDS]


def aggregate(
    store: Store, project_id: int, period: str = "week",
    since: float | None = None, until: float | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """A project's uploaded runs summed per ``day``, ``week`` (from Monday) or ``month`` (UTC).

    Each bucket: ``period_start`` (ISO date), ``runs``, ``energy_j`` ± ``energy_uncertainty_j``,
    ``measured_share`` (of the energy), ``co2_g`` ± ``co2_uncertainty_g`` and ``cost_usd`` ±
    ``cost_uncertainty_usd`` over the runs where they are known, with ``co2_known_runs``
    and ``cost_known_runs``. Uncertainties add linearly (runs share their sensors and grid:
    see :mod:`greenml.report.runset`).
    """
    if period not in PERIODS:
        raise ConfigError(f"period must be one of {', '.join(PERIODS)}")
    u = run_uploads.c
    bucket = _bucket(store, period).label("bucket")
    query = (
        select(
            bucket, func.count().label("runs"),
            func.sum(u.energy_j).label("energy_j"),
            func.sum(u.energy_uncertainty_j).label("energy_uncertainty_j"),
            func.sum(u.measured_j).label("measured_j"),
            func.sum(u.co2_g).label("co2_g"),
            func.sum(u.co2_uncertainty_g).label("co2_uncertainty_g"),
            func.count(u.co2_g).label("co2_known_runs"),
            func.sum(u.cost_usd).label("cost_usd"),
            func.sum(u.cost_uncertainty_usd).label("cost_uncertainty_usd"),
            func.count(u.cost_usd).label("cost_known_runs"),
        )
        .where(u.project_id == project_id)
        .group_by(literal_column("bucket"))
        .order_by(literal_column("bucket"))
    )  # fmt: skip
    if since is not None:
        query = query.where(u.started_at >= since)
    if until is not None:
        query = query.where(u.started_at < until)
    with store.reading("aggregate runs in") as conn:
        rows = list(conn.execute(query).mappings())
    out = []
    for row in rows:
        item = dict(row)
        energy = item["energy_j"] or 0.0
        item["measured_share"] = (item.pop("measured_j") or 0.0) / energy if energy else None
        item["period_start"] = _bucket_start(period, item.pop("bucket"))
        out.append(item)
    return out


def _bucket(store: Store, period: str) -> Any:
    t = run_uploads.c.started_at
    if period == "day":
        return func.floor(t / 86400)
    if period == "week":
        return func.floor((t - _MONDAY_OFFSET_S) / 604800)
    with store.reading("inspect") as conn:
        dialect = conn.dialect.name
    if dialect == "postgresql":
        return func.to_char(func.to_timestamp(t).op("AT TIME ZONE")("UTC"), "YYYY-MM")
    return func.strftime("%Y-%m", t, "unixepoch")


def _bucket_start(period: str, bucket: Any) -> str:
    from datetime import datetime, timezone

    if period == "month":
        return f"{bucket}-01"
    seconds = float(bucket) * (86400 if period == "day" else 604800)
    offset = _MONDAY_OFFSET_S if period == "week" else 0
    return datetime.fromtimestamp(seconds + offset, tz=timezone.utc).date().isoformat()


def latest_start(store: Store, project_id: int) -> float | None:
    """When the project's latest uploaded run started (Unix s), or None without runs."""
    u = run_uploads.c
    query = select(func.max(u.started_at)).where(u.project_id == project_id)
    with store.reading("read uploads in") as conn:
        found = conn.execute(query).scalar()
    return None if found is None else float(found)


PERIOD_S = {"day": 86400.0, "week": 7 * 86400.0, "month": 31 * 86400.0}
"""The longest length of each period (a month: 31 days), to bound a window of periods."""


def top_runs(store: Store, project_id: int, limit: int = 10) -> list[dict[str, Any]]:
    """The project's runs that used the most energy: id, name, user, energy_j, co2_g, cost_usd."""
    u = run_uploads.c
    query = (
        select(runs.c.id, runs.c.name, u.user, u.energy_j, u.co2_g, u.cost_usd)
        .join(run_uploads, u.run_id == runs.c.id)
        .where(u.project_id == project_id, u.energy_j.is_not(None))
        .order_by(u.energy_j.desc())
        .limit(limit)
    )
    with store.reading("rank runs in") as conn:
        return [dict(r) for r in conn.execute(query).mappings()]


def upload_of(store: Store, run_id: str) -> dict[str, Any] | None:
    """The ``run_uploads`` row of a run (its ``ledger_entry`` decoded), or None."""
    with store.reading("read uploads in") as conn:
        row = conn.execute(select(run_uploads).where(run_uploads.c.run_id == run_id)).mappings()
        found = row.first()
    if found is None:
        return None
    out = dict(found)
    out["ledger_entry"] = rec.loads(out["ledger_entry"], None, f"ledger entry of run {run_id}")
    return out


def project_of_run(store: Store, run_id: str) -> int | None:
    """The project id of a run (None: a local run, or no such run)."""
    with store.reading("read") as conn:
        found = conn.execute(select(runs.c.project_id).where(runs.c.id == run_id)).first()
    return None if found is None or found[0] is None else int(found[0])

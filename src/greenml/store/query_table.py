"""Queries of the dashboard's runs table and cross-run charts: runs sorted by any
column and searched by text, a project's totals per day by name, tag or user, and
the runs that state their work (energy per unit of work over time).

Sorting and searching are SQL (the page holds one slice of the result), so a
project of 5,000 runs sorts by cost as fast as by start time.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, or_, select

from greenml.errors import ConfigError
from greenml.store import record as rec
from greenml.store.query import MAX_PAGE, RunFilter, filtered
from greenml.store.schema import run_tags, run_uploads, runs

if TYPE_CHECKING:
    from greenml.store.repository import Store

SORTS = ("started", "name", "status", "user", "duration", "energy", "measured", "co2", "cost")
"""Columns the runs table sorts by."""
GROUPS = ("name", "user", "tag")
"""What the per-day charts group runs by (``tag`` with a tag key)."""
SEARCH_MAX = 200
"""Longest search text (characters)."""


def _sort_column(sort: str) -> Any:
    u, r = run_uploads.c, runs.c
    columns = {
        "started": r.started_at, "name": r.name, "status": r.status, "user": u.user,
        "duration": r.duration_s, "energy": u.energy_j, "co2": u.co2_g, "cost": u.cost_usd,
        "measured": u.measured_j / func.nullif(u.energy_j, 0),
    }  # fmt: skip
    if sort not in columns:
        raise ConfigError(f"sort must be one of {', '.join(SORTS)}")
    return columns[sort]


def _filtered(query: Any, where: RunFilter, search: str) -> Any:
    """``query`` (over runs ⟕ run_uploads) kept to the runs ``where`` and ``search`` match."""
    query = filtered(query, where)
    text = search.strip()
    if len(text) > SEARCH_MAX:
        raise ConfigError(f"search text is longer than {SEARCH_MAX} characters")
    for word in text.split():
        pattern = "%" + word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        query = query.where(or_(*(column.ilike(pattern, escape="\\") for column in (
            runs.c.id, runs.c.name, runs.c.hostname, runs.c.tags, run_uploads.c.user,
            runs.c.extra))))  # fmt: skip
    return query


def sorted_runs(
    store: Store, where: RunFilter, *, search: str = "", sort: str = "started",
    descending: bool = True, offset: int = 0, limit: int = 50,
) -> tuple[list[dict[str, Any]], int]:  # fmt: skip
    """One slice of the runs ``where`` and ``search`` keep, sorted, and how many match.

    ``search``: words that must each appear in the run's id, name, node, tags, user or
    job (case-insensitive). Unknown values sort last either way. Each row is
    :func:`greenml.store.record.summary` plus the upload's totals, ``hostname`` and ``job``
    (the record's job block, or None).
    """
    if not 1 <= limit <= MAX_PAGE:
        raise ConfigError(f"limit must be between 1 and {MAX_PAGE}")
    if offset < 0:
        raise ConfigError("offset must be 0 or more")
    column = _sort_column(sort)
    source = runs.outerjoin(run_uploads, run_uploads.c.run_id == runs.c.id)
    u = run_uploads.c
    fields = [u.user, u.energy_j, u.energy_uncertainty_j, u.measured_j, u.co2_g,
              u.co2_uncertainty_g, u.cost_usd, u.cost_uncertainty_usd]  # fmt: skip
    query = _filtered(select(runs, *fields).select_from(source), where, search)
    ordered = column.desc() if descending else column.asc()
    query = query.order_by(column.is_(None), ordered, runs.c.id).offset(offset).limit(limit)
    counted = _filtered(select(func.count()).select_from(source), where, search)
    now = time.time()
    with store.reading("sort runs in") as conn:
        rows = list(conn.execute(query).mappings())
        total = int(conn.execute(counted).scalar() or 0)
    out = []
    for row in rows:
        item = rec.summary(row, now=now, hostname="")
        item.update({f.key: row[f.key] for f in fields})
        item["hostname"] = row["hostname"]
        extra = rec.loads(row["extra"], {}, f"extra of run {row['id']}")
        job = extra.get("job") if isinstance(extra, dict) else None
        item["job"] = job if isinstance(job, dict) else None
        out.append(item)
    return out, total


def per_day(
    store: Store, project_id: int, group: str, tag_key: str = "",
    since: float | None = None, until: float | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """The project's uploaded runs summed per UTC day and per ``group`` (name, user, tag).

    Each row: ``day`` (Unix s of its midnight), ``group`` (None: the runs without it),
    ``runs``, ``energy_j``, ``co2_g``, ``cost_usd`` (None when no run of the row knows
    it), ``co2_known_runs``, ``cost_known_runs``.
    """
    u = run_uploads.c
    if group == "tag" and not tag_key:
        raise ConfigError("grouping by tag needs a tag key (by=tag&key=team)")
    if group not in GROUPS:
        raise ConfigError(f"group by one of {', '.join(GROUPS)}")
    day = func.floor(u.started_at / 86400).label("day")
    source: Any = run_uploads.join(runs, runs.c.id == u.run_id)
    if group == "tag":
        source = source.outerjoin(run_tags, (run_tags.c.run_id == u.run_id)
                                  & (run_tags.c.key == tag_key))  # fmt: skip
        label: Any = run_tags.c.value
    else:
        label = runs.c.name if group == "name" else u.user
    query = (
        select(day, label.label("grp"), func.count().label("runs"),
               func.sum(u.energy_j).label("energy_j"), func.sum(u.co2_g).label("co2_g"),
               func.count(u.co2_g).label("co2_known_runs"),
               func.sum(u.cost_usd).label("cost_usd"),
               func.count(u.cost_usd).label("cost_known_runs"))
        .select_from(source).where(u.project_id == project_id)
        .group_by(day, label).order_by(day)
    )  # fmt: skip
    if since is not None:
        query = query.where(u.started_at >= since)
    if until is not None:
        query = query.where(u.started_at < until)
    with store.reading("sum runs per day in") as conn:
        found = list(conn.execute(query).mappings())
    return [{**dict(r), "day": float(r["day"]) * 86400, "group": r["grp"]} for r in found]


def work_runs(
    store: Store, project_id: int, since: float | None = None, limit: int = 5000
) -> list[dict[str, Any]]:
    """Uploaded runs with their energy and tags, oldest first, for energy per unit of work.

    Each: ``id``, ``name``, ``started_at`` (Unix s), ``energy_j``, ``tags`` (dict).
    """
    u = run_uploads.c
    query = (
        select(runs.c.id, runs.c.name, runs.c.tags, u.started_at, u.energy_j)
        .join(run_uploads, u.run_id == runs.c.id)
        .where(u.project_id == project_id, u.energy_j.is_not(None))
        .order_by(u.started_at).limit(limit)
    )  # fmt: skip
    if since is not None:
        query = query.where(u.started_at >= since)
    with store.reading("read work of runs in") as conn:
        rows = list(conn.execute(query).mappings())
    return [{"id": r["id"], "name": r["name"], "started_at": float(r["started_at"]),
             "energy_j": float(r["energy_j"]),
             "tags": rec.loads(r["tags"], {}, f"tags of run {r['id']}")} for r in rows]  # fmt: skip


__all__ = ["GROUPS", "SORTS", "per_day", "sorted_runs", "work_runs"]

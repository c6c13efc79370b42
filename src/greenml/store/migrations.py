"""Schema migrations: a database written by any earlier greenml upgrades in place.

Each step takes the database from version ``N`` to ``N + 1`` inside the one
write transaction of :func:`greenml.store.engine.init_schema` (on PostgreSQL
under its advisory lock), so an upgrade is all or nothing. Steps that only add
tables create them; steps that change a table use Alembic's operations
(``ALTER TABLE`` on PostgreSQL, SQLite's limited ALTER or table rebuild
through ``batch_alter_table``).

Every step is safe to run on a database that already has some of its
changes (a version lowered by hand, a step interrupted on a backend without
transactional DDL).

The version itself stays in the ``meta`` table, where every greenml since
schema 1 looks for it: an older greenml keeps refusing a newer database with a
clear message, which Alembic's own ``alembic_version`` table would not give it.
Alembic is used as a library (its ``Operations``), without a script folder or
``alembic.ini``: the steps are Python functions shipped in this module.

Lazy imports: Alembic, only when a database needs upgrading.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from sqlalchemy import Column, Connection, Index, Integer, Table, delete, inspect, select

from greenml.store.schema import (
    SCHEMA_VERSION,
    advisor_state,
    llm_requests,
    llm_serving,
    projects,
    run_tags,
    run_uploads,
    runs,
    sample_blocks,
    tokens,
)

Step = Callable[[Connection], None]


def _create(*tables: Table) -> Step:
    def step(conn: Connection) -> None:
        for table in tables:
            table.create(conn, checkfirst=True)

    return step


def _v3_to_v4(conn: Connection) -> None:
    """Projects, tokens, uploads and the tag index; runs get ``project_id``; tags are indexed."""
    from alembic.migration import MigrationContext
    from alembic.operations import Operations

    for table in (projects, tokens, run_tags, run_uploads):
        table.create(conn, checkfirst=True)
    op = Operations(MigrationContext.configure(conn))
    found = inspect(conn)
    if "project_id" not in {c["name"] for c in found.get_columns("runs")}:
        op.add_column("runs", Column("project_id", Integer, nullable=True))
    index: Index = next(i for i in runs.indexes if "project_id" in i.columns)
    if str(index.name) not in {i["name"] for i in found.get_indexes("runs")}:
        op.create_index(str(index.name), "runs", [c.name for c in index.columns])
    conn.execute(delete(run_tags))  # rebuilt whole: the step may meet a half-known database
    rows = []
    for run_id, text in conn.execute(select(runs.c.id, runs.c.tags)):
        try:
            tags = json.loads(text) if text else {}
        except ValueError:
            tags = {}  # an unreadable tags column keeps its text; it just is not indexed
        if isinstance(tags, dict):
            rows += [{"run_id": run_id, "key": str(k), "value": str(v)} for k, v in tags.items()]
    if rows:
        conn.execute(run_tags.insert(), rows)


STEPS: dict[int, Step] = {
    1: _create(sample_blocks),  # schema 2: packed sample blocks
    2: _create(advisor_state),  # schema 3: what advisors remember
    3: _v3_to_v4,
    4: _create(llm_requests),  # schema 5: the LLM proxy's per-request records
    5: _create(llm_serving),  # schema 6: a team server's per-minute LLM serving aggregates
}
"""The step that upgrades a database *from* each version."""

assert sorted(STEPS) == list(range(1, SCHEMA_VERSION)), "a schema version has no migration"


def upgrade(conn: Connection, version: int) -> list[int]:
    """Apply every step from ``version`` to :data:`SCHEMA_VERSION`; the versions passed.

    Args:
        conn: A connection inside the write transaction that holds the schema lock.
        version: The database's stored schema version.
    """
    passed: list[int] = []
    for start in range(version, SCHEMA_VERSION):
        STEPS[start](conn)
        passed.append(start + 1)
    return passed


def describe() -> list[dict[str, Any]]:
    """The migration steps as ``{"from": N, "to": N + 1, "step": doc}`` (for docs and tests)."""
    return [
        {"from": n, "to": n + 1, "step": (STEPS[n].__doc__ or "create tables").strip()}
        for n in sorted(STEPS)
    ]

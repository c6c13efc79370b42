"""``greenml.runs()``: stored runs as a pandas DataFrame, one row per run.

The rows are :func:`greenml.store.table.run_row`'s, the same as
``greenml runs export --all --format csv|parquet``. Runs still waiting in the
spool are stored first, as every reader does.

Lazy imports: pandas, when the DataFrame is built (``greenml[tables]``).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError, MissingExtra
from greenml.store.table import columns, float_columns, run_row

if TYPE_CHECKING:
    from greenml.store.repository import Store


def runs(
    name: str | None = None,
    tag: dict[str, str] | str | None = None,
    since: datetime | str | None = None,
    db: str | None = None,
) -> Any:
    """The stored runs (oldest first) as a ``pandas.DataFrame``.

    Args:
        name: Only runs with this name.
        tag: Only runs carrying these tags (``{"k": "v"}`` or ``"k=v"``).
        since: Only runs started at or after this time (a datetime or ISO 8601 text).
        db: The store; ``GREENML_DB`` or the default file when ``None``.

    Raises:
        MissingExtra: pandas is not installed.
        ConfigError: A bad ``tag`` or ``since``.
    """
    try:
        import pandas as pd
    except ImportError as exc:
        raise MissingExtra("greenml.runs()", "tables", exc) from None
    from greenml.run.spool import ingest_pending
    from greenml.store import open_store

    with open_store(db) as store:
        ingest_pending(store, db or "")
        rows = table_rows(store, name=name, tag=tag, since=since)
    frame = pd.DataFrame(rows, columns=columns(rows))
    for name in float_columns(list(frame.columns)):  # unknown figures: NaN, not None
        frame[name] = pd.to_numeric(frame[name], errors="coerce").astype("float64")
    frame["started_at"] = pd.to_datetime(frame["started_at"], utc=True)
    return frame


def table_rows(
    store: Store, *, name: str | None = None, tag: dict[str, str] | str | None = None,
    since: datetime | str | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """The rows of the runs that match, oldest first."""
    tags = _tags(tag)
    after = since_time(since)
    rows = []
    for summary in store.list_runs(limit=0, name=name, tag=tags or None):
        started = datetime.fromisoformat(summary["started_at"])
        if after is not None and started < after:
            continue
        rows.append(run_row(store.get_record(summary["id"])))
    return rows[::-1]


def _tags(tag: dict[str, str] | str | None) -> dict[str, str]:
    if tag is None or isinstance(tag, dict):
        return dict(tag or {})
    key, sep, value = str(tag).partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"tag {tag!r} is not of the form key=value")
    return {key.strip(): value}


def since_time(since: datetime | str | None) -> datetime | None:
    if since is None:
        return None
    if isinstance(since, str):
        try:
            since = datetime.fromisoformat(since.replace("Z", "+00:00"))
        except ValueError:
            raise ConfigError(f"since {since!r} is not an ISO 8601 time") from None
    return since if since.tzinfo is not None else since.replace(tzinfo=timezone.utc)

"""The diagnosis of a run as the dashboard shows it: over the run's own project only.

:func:`greenml.diagnose.run.diagnose_run` compares a run with stored runs of
the same name (the scaling finding). On a team server it is handed a view of
the store whose run listing is the project's, so no other project's runs are
read into a page. Diagnoses are kept a minute (reading the same-named runs is
the slow part of a run page), and the records of those runs too: an uploaded
run is never rewritten (a second upload of an id stores nothing). The scaling
finding looks at the :data:`SAME_NAME_RUNS` latest runs of the name, and says so.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from greenml.store import query

if TYPE_CHECKING:
    from greenml.diagnose.findings import Diagnosis
    from greenml.store.repository import Store

KEEP_S = 60.0
SAME_NAME_RUNS = 20
"""The scaling finding compares a run with at most this many latest runs of its name
(a page that read every run of a job run daily for years would never answer)."""
SCALING_NOTE = f"scaling compared over at most the {SAME_NAME_RUNS} latest runs of this name"
MAX_RECORDS = 20_000
_records: dict[tuple[str, str], dict[str, Any]] = {}  # (store, run id) → record, oldest first
_cache: dict[tuple[str, int, str], tuple[float, Any]] = {}
_lock = threading.Lock()


class ProjectStore:
    """A store whose ``list_runs`` lists one project's runs; everything else as the store."""

    def __init__(self, store: Store, project_id: int) -> None:
        self._store = store
        self._project_id = project_id

    def list_runs(self, limit: int = 20, name: str | None = None,
                  tag: dict[str, str] | None = None) -> list[dict[str, Any]]:  # fmt: skip
        where = query.RunFilter(project_id=self._project_id, name=name, tags=dict(tag or {}))
        size = min(limit if limit > 0 else SAME_NAME_RUNS, SAME_NAME_RUNS)
        return query.find_runs(self._store, where, limit=size)[0]

    def get_record(self, id_or_prefix: str) -> dict[str, Any]:
        """A run's record; an uploaded run's is kept (uploads are never rewritten)."""
        key = (self._store.url, id_or_prefix)
        with _lock:
            found = _records.get(key)
        if found is not None:
            return found
        record = self._store.get_record(id_or_prefix, exact=True)
        if record["id"] == id_or_prefix and record.get("status") != "running":
            with _lock:
                if len(_records) >= MAX_RECORDS:
                    _records.pop(next(iter(_records)))
                _records[key] = record
        return record

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def diagnose(store: Store, project_id: int, run_id: str) -> Diagnosis:
    """The run's diagnosis within its project (kept :data:`KEEP_S` seconds).

    Raises:
        GreenmlError: The run cannot be diagnosed (no samples ...).
    """
    from greenml.diagnose.run import diagnose_run

    key = (store.url, project_id, run_id)
    now = time.monotonic()
    with _lock:
        found = _cache.get(key)
    if found is not None and now - found[0] < KEEP_S:
        return found[1]  # type: ignore[no-any-return]
    result = diagnose_run(ProjectStore(store, project_id), run_id)  # type: ignore[arg-type]
    with _lock:
        for stale in [k for k, (t, _) in _cache.items() if now - t >= KEEP_S]:
            del _cache[stale]
        _cache[key] = (now, result)
    return result

"""The run record: :class:`RunRecord` and its typed blocks, on the ground floor.

It depends only on :mod:`greenml.errors`; the store keeps rows and SQL, and
everything else (the run drivers, the ledger, reports, the team server) takes
the record from here. ``greenml.store.run_record`` and its siblings re-export
these names for one release.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from greenml.record.run_record import RECORD_SCHEMA_VERSION, RunRecord

__all__ = ["RECORD_SCHEMA_VERSION", "RunRecord"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from greenml.record import run_record

        return getattr(run_record, name)
    raise AttributeError(f"module 'greenml.record' has no attribute {name!r}")

"""The run record: :class:`RunRecord` and its typed blocks, on the ground floor.

It depends only on :mod:`greenml.errors`; the store keeps rows and SQL, and
everything else (the run drivers, the ledger, reports, the team server) takes
the record from here. ``greenml.store.run_record`` and its siblings re-export
these names for one release. Importing it is cheap (dataclasses only).
"""

from __future__ import annotations

from greenml.record.run_record import RECORD_SCHEMA_VERSION, RunRecord

__all__ = ["RECORD_SCHEMA_VERSION", "RunRecord"]

"""The run store's schema version, importable without SQLAlchemy (the light reader's check)."""

from __future__ import annotations

SCHEMA_VERSION = 6
"""Bump when the tables change (and add the step to :mod:`greenml.store.migrations`);
a database newer than the code is refused."""

"""Fixtures shared with the store tests: a fresh SQLite file or PostgreSQL schema per test."""

from __future__ import annotations

from tests.store.conftest import db_url, pg_admin_url, pg_url

__all__ = ["db_url", "pg_admin_url", "pg_url"]

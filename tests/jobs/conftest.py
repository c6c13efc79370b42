"""The store fixtures of tests/store (SQLite and a real PostgreSQL), and a private ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.store.conftest import db_url, pg_admin_url, pg_url, store

__all__ = ["db_url", "pg_admin_url", "pg_url", "store"]


@pytest.fixture(autouse=True)
def _private_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GREENML_LEDGER", str(tmp_path / "ledger.jsonl"))
    monkeypatch.delenv("GREENML_LEDGER_KEY", raising=False)

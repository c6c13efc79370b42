"""Fixtures: a server app over a fresh store (SQLite and PostgreSQL), and its tokens."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.store.conftest import db_url, pg_admin_url, pg_url  # noqa: F401 - fixtures

pytest.importorskip("fastapi")


@dataclass
class Server:
    client: object
    url: str
    tokens: dict[str, str]  # "A-write", "A-read", "A-admin", "B-write" ...


@pytest.fixture
def server(db_url: str, tmp_path: Path) -> Iterator[Server]:  # noqa: F811
    from fastapi.testclient import TestClient

    from greenml.server.app import create_app
    from greenml.store import access, open_store

    with open_store(db_url) as store:
        tokens = {f"{p}-{r}": access.create_token(store, p, r)
                  for p in ("A", "B") for r in ("read", "write", "admin")}  # fmt: skip
    app = create_app(db_url, max_body_bytes=2_000_000)
    with TestClient(app) as client:
        yield Server(client, db_url, tokens)
    app.state.greenml.store.close()

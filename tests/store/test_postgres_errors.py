"""PostgreSQL connection failures become one-line StoreErrors with the password masked."""

from __future__ import annotations

import socket

import pytest

from greenml.errors import StoreError
from greenml.store import open_store


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_refused_server_is_store_error_with_masked_password() -> None:
    pytest.importorskip("psycopg")
    port = _closed_port()
    url = f"postgresql://alice:s3cret@127.0.0.1:{port}/test"
    with pytest.raises(StoreError) as err:
        open_store(url)
    message = str(err.value)
    assert "\n" not in message
    assert "s3cret" not in message
    assert f"postgresql+psycopg://alice:***@127.0.0.1:{port}/test" in message
    assert "refused" in message.lower() or "connect" in message.lower()


def test_unknown_database_is_store_error(pg_admin_url: str) -> None:
    base = pg_admin_url.rsplit("/", 1)[0]
    with pytest.raises(StoreError, match="greenml_no_such_db") as err:
        open_store(f"{base}/greenml_no_such_db")
    assert "\n" not in str(err.value)

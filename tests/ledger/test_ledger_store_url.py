"""Issue 29: a PostgreSQL store's ledger is named after its database, not its URL as typed.

A URL with a password, one without, another ``connect_timeout`` or its parameters in
another order reach one database and so one ledger; a ledger an earlier greenml named
after the URL as typed is moved to its new name on first use.
"""

from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path
from urllib.parse import urlsplit

import platformdirs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from greenml.ledger import ledger_path, verify
from greenml.ledger.paths import SUFFIX, store_identity
from greenml.store import open_store
from greenml.store.url import mask_url, resolve_url
from tests.ledger.conftest import add_runs, read


def _with_password(url: str, password: str = "s3cret") -> str:
    scheme, rest = url.split("://", 1)
    user, _, host = rest.partition("@")
    return f"{scheme}://{user}:{password}@{host}"


def _earlier_name(url: str) -> Path:
    """Where greenml before this fix put the ledger: the masked URL as typed, hashed."""
    masked = mask_url(resolve_url(url))
    parts = urlsplit(masked)
    label = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{parts.hostname or 'local'}-{parts.path[1:]}")
    digest = hashlib.sha256(masked.encode("utf-8")).hexdigest()[:12]
    folder = Path(platformdirs.user_data_dir("greenml")) / "ledgers"
    return folder / f"postgresql-{label}-{digest}{SUFFIX}"


@pytest.fixture
def no_ledger_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ledger is found from the store's URL, as a user without GREENML_LEDGER has it."""
    monkeypatch.delenv("GREENML_LEDGER")


@pytest.mark.usefixtures("no_ledger_env")
def test_postgres_ledger_does_not_depend_on_url_password(pg_url: str) -> None:
    """Runs stored through the URL with a password and through the one without land in one
    ledger, and `verify` with either URL finds every run ledgered (none "removed")."""
    secret = _with_password(pg_url)
    volatile = f"{secret}&connect_timeout=7&application_name=x&sslmode=prefer"
    path = ledger_path(pg_url)
    assert path is not None
    assert ledger_path(secret) == path
    assert ledger_path(volatile) == path
    with open_store(pg_url) as bare_store:
        add_runs(bare_store, 2)
    with open_store(secret) as secret_store:
        add_runs(secret_store, 2, start=2)
        result = verify(path, store=secret_store)
    assert result.ok, [str(p) for p in result.problems]
    assert result.count == 4
    assert not result.unledgered
    assert "s3cret" not in str(path)


@pytest.mark.usefixtures("no_ledger_env")
def test_postgres_ledger_of_other_schema_is_another_ledger(pg_url: str) -> None:
    """The options that choose a schema are the store's identity: kept in the name."""
    other = pg_url.replace("search_path%3D", "search_path%3Dother_")
    assert ledger_path(other) != ledger_path(pg_url)


@pytest.mark.usefixtures("no_ledger_env")
def test_postgres_ledger_named_by_earlier_greenml_is_moved(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A store ledgered through a URL with a password keeps its chain: the old file is moved
    to the new name (with a note), later runs chain on, and verify is OK."""
    secret = _with_password(pg_url)
    old = _earlier_name(secret)
    old.parent.mkdir(parents=True, exist_ok=True)
    with open_store(secret) as store:
        monkeypatch.setenv("GREENML_LEDGER", str(old))  # as the earlier greenml wrote it
        add_runs(store, 2)
        monkeypatch.delenv("GREENML_LEDGER")
        first = read(old)
        with caplog.at_level(logging.WARNING, logger="greenml"):
            path = ledger_path(pg_url)  # the URL without the password finds it too
        assert path is not None and path != old
        assert not old.exists()
        assert read(path) == first
        assert "moved this store's ledger" in caplog.text
        add_runs(store, 1, start=2)
        result = verify(path, store=store)
    assert result.ok, [str(p) for p in result.problems]
    assert result.count == 3


@pytest.mark.usefixtures("no_ledger_env")
def test_postgres_ledger_split_by_earlier_greenml_keeps_first_chain(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Two old files (with and without the password): the chain begun first is moved, the
    other is left where it is and named in a note."""
    secret = _with_password(pg_url)
    older, newer = _earlier_name(pg_url), _earlier_name(secret)
    older.parent.mkdir(parents=True, exist_ok=True)
    with open_store(pg_url) as store:
        for target, start in ((older, 0), (newer, 1)):
            monkeypatch.setenv("GREENML_LEDGER", str(target))
            add_runs(store, 1, start=start)
    monkeypatch.delenv("GREENML_LEDGER")
    first = read(older)
    with caplog.at_level(logging.WARNING, logger="greenml"):
        path = ledger_path(secret)
    assert path is not None
    if path != older:  # the passwordless name may already be the new one
        assert not older.exists()
    assert read(path) == first
    assert newer.exists()
    assert str(newer) in caplog.text


_text = st.text(st.characters(codec="ascii", categories=("L", "N")), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(password=_text, timeout=st.integers(1, 600), app=_text, user=_text)
def test_store_identity_drops_password_and_settings(
    password: str, timeout: int, app: str, user: str
) -> None:
    """Property: a password and per-connection settings never reach the identity; the
    user, host, database and schema options do."""
    base = f"postgresql+psycopg://{user}@db.example:5432/prod?options=-csearch_path%3Dx"
    noisy = (f"postgresql+psycopg://{user}:{password}@DB.example:5432/prod?"
             f"connect_timeout={timeout}&application_name={app}&options=-csearch_path%3Dx"
             f"&password={password}&sslpassword={password}")  # fmt: skip
    assert store_identity(noisy) == store_identity(base)
    assert f":{password}@" not in store_identity(noisy)
    assert "search_path" in store_identity(noisy) and user in store_identity(noisy)

"""Fixtures: the same tests run against SQLite (a temp file) and a real PostgreSQL."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from greenml.measure.measurement import ComponentEnergy, DeviceEnergy, Measurement
from greenml.store import open_store
from greenml.store.repository import Store

PG_URL = os.environ.get("GREENML_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")


def _pg_unavailable(reason: str) -> None:
    message = f"PostgreSQL not reachable at {PG_URL} ({reason}); set GREENML_TEST_PG_URL"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def pg_admin_url() -> str:
    """The PostgreSQL URL, checked once per session (fail under CI, else skip)."""
    try:
        import psycopg
    except ImportError:
        _pg_unavailable("psycopg not installed")
    try:
        psycopg.connect(PG_URL, connect_timeout=5).close()
    except psycopg.Error as exc:
        _pg_unavailable(" ".join(str(exc).split()))
    return PG_URL


@pytest.fixture
def pg_url(pg_admin_url: str) -> Iterator[str]:
    """A PostgreSQL URL whose search_path is a fresh schema, dropped afterwards."""
    import psycopg

    schema = f"greenml_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in pg_admin_url else "?"
    yield f"{pg_admin_url}{sep}options=-csearch_path%3D{schema}"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database URL on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'greenml.db'}"
    url: str = request.getfixturevalue("pg_url")
    return url


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    with open_store(db_url) as s:
        yield s


def make_measurement(name: str = "train", energy_j: float = 1200.0) -> Measurement:
    """A window with one GPU (counter) and one CPU (estimated) device."""
    return Measurement(
        name=name,
        started_at=datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc),
        duration_s=60.0,
        components={
            "gpu": ComponentEnergy(
                devices={
                    "gpu0": DeviceEnergy(
                        energy_j=energy_j,
                        method="counter",
                        uncertainty_rel=0.05,
                        name="NVIDIA H100 80GB HBM3",
                    )
                }
            ),
            "cpu": ComponentEnergy(
                devices={
                    "cpu0": DeviceEnergy(
                        energy_j=300.0, method="estimated", uncertainty_rel=0.2, name="Xeon"
                    )
                }
            ),
        },
    )

"""The real Slurm cluster of :mod:`tests.slurm.cluster`, once per test session.

Without Slurm installed (``make test`` installs it), these tests skip with the
reason, or fail under ``CI=true``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from tests.slurm.cluster import Cluster, missing_tools
from tests.store.conftest import pg_admin_url

__all__ = ["pg_admin_url"]


@pytest.fixture(scope="session")
def cluster_store(pg_admin_url: str) -> Iterator[str]:
    """The nodes' shared store: a fresh schema of the local PostgreSQL, dropped afterwards."""
    import psycopg

    schema = f"greenml_slurm_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in pg_admin_url else "?"
    yield f"{pg_admin_url}{sep}options=-csearch_path%3D{schema}"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory, cluster_store: str) -> Iterator[Cluster]:
    missing = missing_tools()
    if missing or os.geteuid() != 0:
        why = f"a real Slurm needs {', '.join(missing)}" if missing else "a real Slurm needs root"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{why} (CI=true: the Makefile installs slurm-wlm, munge, slurmdbd)")
        pytest.skip(why)
    found = Cluster(tmp_path_factory.mktemp("slurm"), cluster_store)
    try:
        found.start()
        yield found
    finally:
        found.stop()


@pytest.fixture()
def prolog(cluster: Cluster) -> Iterator[Cluster]:
    """The cluster with the shipped prolog and epilog switched on for this test."""
    cluster.prolog_on.touch()
    try:
        yield cluster
    finally:
        cluster.prolog_on.unlink()

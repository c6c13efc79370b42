"""The stand-in provider server, started once for these tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.llm_remote.standin import StandIn


@pytest.fixture(scope="session")
def standin() -> Iterator[StandIn]:
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    with StandIn() as server:
        yield server

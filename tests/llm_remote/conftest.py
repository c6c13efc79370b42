"""The stand-in provider server, started once for these tests; SDKs required under CI."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from types import ModuleType

import pytest

from tests.llm_remote.standin import StandIn


def require(module: str) -> ModuleType:
    """Import ``module`` (extra ``llm-clients``/``otlp``/``server``): fail under CI, else skip."""
    try:
        return importlib.import_module(module)
    except ImportError:
        message = f"{module} is not installed (pip install -e '.[llm-clients,otlp,server]')"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message, allow_module_level=True)


@pytest.fixture(scope="session")
def standin() -> Iterator[StandIn]:
    require("starlette")
    require("uvicorn")
    with StandIn() as server:
        yield server

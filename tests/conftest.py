"""Suite-wide settings: Hypothesis without time limits, and the ``slow`` lane.

Speed is measured in benchmarks/, never in unit tests: on a shared 2-core machine a
property test's example may take longer than Hypothesis's 200 ms deadline, or its input
generation may look slow, without anything being wrong with greenml.

``make unit`` runs ``pytest -m "not slow" -n auto``; ``make test`` runs everything. A test
module is slow when it starts processes (``subprocess``, ``sys.executable``), drives a
browser, a Slurm cluster or a fuzzer, or lies in a folder listed in ``_SLOW_DIRS``; a module
may also say ``pytestmark = pytest.mark.slow`` itself. The rule reads the module's text
once, so a new subprocess test lands in the slow lane without anyone remembering to mark it.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "greenml", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("greenml")


_SLOW_TEXT = re.compile(
    r"\bsubprocess\b|sys\.executable|playwright|chromium|\bslurm|\bsbatch\b|fuzz|_e2e\b",
    re.IGNORECASE,
)
_SLOW_DIRS = ("integrations", "accounting/live")


@cache
def _slow_module(path: str) -> bool:
    """Whether the test module at ``path`` belongs to the slow lane (see the docstring)."""
    file = Path(path)
    posix = file.as_posix()
    if any(f"/tests/{d}/" in posix for d in _SLOW_DIRS) or "fuzz" in file.name:
        return True
    try:
        return bool(_SLOW_TEXT.search(file.read_text(encoding="utf-8")))
    except OSError:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test of a slow module ``slow`` (deselect with ``-m "not slow"``)."""
    for item in items:
        if _slow_module(str(item.path)):
            item.add_marker(pytest.mark.slow)

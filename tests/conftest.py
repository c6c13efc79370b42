"""Suite-wide settings: Hypothesis without time limits, every test kept out of HOME, and
the ``slow`` lane.

Speed is measured in benchmarks/, never in unit tests: on a shared 2-core machine a
property test's example may take longer than Hypothesis's 200 ms deadline, or its input
generation may look slow, without anything being wrong with greenml.

Isolation. Every test runs with ``HOME`` and the ``XDG_*`` folders pointed into its own
temporary directory and with every ``GREENML_*`` variable cleared: a test that needs one
sets it itself. At the end of the session the real HOME's greenml folders are compared
with a snapshot taken at its start; the session fails when the suite changed them.

``make unit`` runs ``pytest -m "not slow" -n auto``; ``make test`` runs everything. A test
module is slow when it starts processes (``subprocess``, ``sys.executable``), drives a
browser, a Slurm cluster or a fuzzer, or lies in a folder listed in ``_SLOW_DIRS``; a module
may also say ``pytestmark = pytest.mark.slow`` itself. The rule reads the module's text
once, so a new subprocess test lands in the slow lane without anyone remembering to mark it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("greenml", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("greenml")

_REAL_HOME = Path(os.path.expanduser("~"))


def greenml_folders(home: Path) -> list[Path]:
    """The folders greenml writes under a HOME (data, config, cache, state; Linux and macOS)."""
    return [
        home / ".local" / "share" / "greenml",
        home / ".config" / "greenml",
        home / ".cache" / "greenml",
        home / ".local" / "state" / "greenml",
        home / "Library" / "Application Support" / "greenml",
    ]


def home_snapshot(home: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under greenml's folders in ``home``: path → (size, mtime_ns)."""
    found: dict[str, tuple[int, int]] = {}
    for top in greenml_folders(home):
        if not top.exists():
            continue
        for path in [top, *top.rglob("*")]:
            try:
                stat = path.lstat()
            except OSError:
                continue
            found[str(path)] = (stat.st_size, stat.st_mtime_ns)
    return found


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_SNAPSHOT] = home_snapshot(_REAL_HOME)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    before = session.config.stash.get(_SNAPSHOT, None)
    if before is None:
        return
    after = home_snapshot(_REAL_HOME)
    if after != before:
        changed = sorted(set(before.items()) ^ set(after.items()))
        names = sorted({path for path, _ in changed})
        print(f"\nthe test suite changed the real HOME: {', '.join(names[:10])}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_SNAPSHOT = pytest.StashKey[dict[str, tuple[int, int]]]()


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """HOME and XDG folders in a temporary directory; no ``GREENML_*`` from the caller."""
    home = tmp_path_factory.mktemp("home")
    runtime = home / "run"
    runtime.mkdir(mode=0o700)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        patch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
        patch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
        patch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
        patch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
        patch.setenv("XDG_RUNTIME_DIR", str(runtime))
        for name in list(os.environ):
            if name.startswith("GREENML_"):
                patch.delenv(name)
        yield home


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

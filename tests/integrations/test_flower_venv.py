"""The Flower mod inside flwr's own ClientApp, in the environment the Makefile builds for it.

flwr 1.42 pins older protobuf, rich, fastapi and packaging than the other test extras
use, so ``make test`` installs it apart, in ``.venv-flower`` (flwr, pytest and greenml
itself), and this test runs ``test_flower.py`` there. Under ``CI=true`` it must run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FLOWER_PYTHON = ROOT / ".venv-flower" / "bin" / "python"


def test_the_flower_client_mod_passes_in_flowers_own_environment() -> None:
    if not FLOWER_PYTHON.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{FLOWER_PYTHON} is missing: `make test` builds it (flwr==1.42.0)")
        pytest.skip("no .venv-flower (built by `make test`)")
    if "flwr" in sys.modules:
        pytest.skip("flwr is importable here: test_flower.py runs in this environment")
    proc = subprocess.run(
        [str(FLOWER_PYTHON), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--noconftest",
         "-W", "ignore::pytest.PytestConfigWarning", "tests/integrations/test_flower.py"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout, proc.stdout

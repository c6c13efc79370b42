"""Small shared test helpers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


class ManualClock:
    """A clock that moves only when a test says so."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def greenml_cli(
    *args: str,
    stdin: str | None = None,
    timeout: float = 120,
    cwd: Path | None = None,
    **env: str,
) -> subprocess.CompletedProcess[str]:
    """Run the installed ``greenml`` entry point (this checkout's source first on the path)."""
    exe = Path(sys.executable).with_name("greenml")
    argv = [str(exe)] if exe.exists() else [sys.executable, "-m", "greenml"]
    environ = {**os.environ, "PYTHONPATH": str(SRC), **env}
    return subprocess.run([*argv, *args], capture_output=True, text=True, env=environ,
                          input=stdin, timeout=timeout, check=False, cwd=cwd)  # fmt: skip


SRC = Path(__file__).resolve().parents[1] / "src"

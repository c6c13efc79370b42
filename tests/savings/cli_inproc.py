"""``greenml …`` in-process (no interpreter start per call), with the test's own config home."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from greenml.cli import main


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def run_cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, config_home: Path,
    *argv: str,
) -> Done:  # fmt: skip
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config_home))
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return Done(code, out, err)

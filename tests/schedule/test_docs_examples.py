"""The docs' scheduling examples run as written (the traces they name ship with greenml)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.helpers import greenml_cli

DOC = Path(__file__).resolve().parents[2] / "docs" / "capabilities" / "schedule.md"


def _examples() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    commands = [" ".join(b.replace("\\\n", " ").split()) for b in blocks]
    return [c for c in commands if "--intensity-trace" in c and c.startswith("greenml plan")]


def test_the_docs_name_the_traces_they_use() -> None:
    assert len(_examples()) >= 3
    for command in _examples():
        assert "_hourly.csv" not in command, command  # a file the reader does not have


@pytest.mark.parametrize("command", _examples())
def test_docs_replay_example_runs(command: str, tmp_path: Path) -> None:
    args = shlex.split(command)[1:]
    done = greenml_cli(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "cannot read trace" not in done.stderr
    assert "packaged sample" in done.stdout + done.stderr or "--json" in args

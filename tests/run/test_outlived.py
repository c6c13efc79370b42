"""Issue 29: a descendant that outlives the command is said in the run's notes, not dropped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

PY = sys.executable


def _run(tmp_path: Path, script: str) -> dict[str, Any]:
    out, err = tmp_path / "run.json", tmp_path / "stderr"
    env = {**os.environ, "GREENML_DB": str(tmp_path / "runs.db"),
           "GREENML_SPOOL_DIR": str(tmp_path / "spool")}  # fmt: skip
    with err.open("w") as stderr:  # the lingering child keeps its stderr open: not a pipe
        done = subprocess.run([PY, "-m", "greenml", "run", "-q", "--gpus", "none", "--json",
                               str(out), "--", "sh", "-c", script], stdout=subprocess.DEVNULL,
                              stderr=stderr, env=env, timeout=120)  # fmt: skip
    assert done.returncode == 0, err.read_text()
    assert "Traceback" not in err.read_text()
    record: dict[str, Any] = json.loads(out.read_text())
    return record


def test_a_descendant_that_outlives_the_command_is_noted(tmp_path: Path) -> None:
    """`sh -c 'sleep 3 & exit 0'`: the run's notes say one process outlived the command
    and that its energy after the command ended is not counted."""
    record = _run(tmp_path, "sleep 3 & exit 0")
    notes = [n for n in record["energy"]["notes"] if "still ran when it ended" in n]
    assert len(notes) == 1, record["energy"]["notes"]
    assert notes[0].startswith("1 process started by the command (pid ")
    assert "its energy after the command ended is not counted" in notes[0]


def test_two_descendants_left_running_are_counted_and_none_is_not_said(tmp_path: Path) -> None:
    record = _run(tmp_path, "sleep 3 & sleep 3 & exit 0")
    assert any(n.startswith("2 processes started by the command") for n in
               record["energy"]["notes"]), record["energy"]["notes"]  # fmt: skip
    quiet = _run(tmp_path, "sleep 0.2 & wait")  # everything ended with the command
    assert not any("still ran when it ended" in n for n in quiet["energy"]["notes"])

"""``greenml bisect`` on a real git repository where one commit makes the workload slower.

The workload busy-loops until its process has used the CPU-seconds written in
``work.txt``: with the process-scope CPU model its dynamic energy tracks that
figure, whatever the machine's load, so the gate's verdict at each step is sure.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from greenml.cli.app import cli
from greenml.diagnose.bisect import bisect
from greenml.diagnose.git_repo import GitRepo
from greenml.errors import ConfigError
from greenml.record.run_record import RunRecord

WORK = """\
import pathlib, time
seconds = float(pathlib.Path("work.txt").read_text())
while time.process_time() < seconds:
    pass
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip


def _commit(repo: Path, message: str, **files: str) -> str:
    for name, text in files.items():
        (repo / name).write_text(text)
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """good → notes → slower (the first bad commit) → notes."""
    path = tmp_path / "project"
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    _git(path, "config", "user.email", "dev@example.com")
    _git(path, "config", "user.name", "Dev")
    _commit(path, "the workload", **{"work.py": WORK, "work.txt": "0.2"})
    _commit(path, "notes 1", **{"notes.txt": "1"})
    _commit(path, "more work per step", **{"work.txt": "0.8"})
    _commit(path, "notes 2", **{"notes.txt": "2"})
    return path


def test_bisect_names_the_commit_that_made_the_workload_slower(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slower = _git(repo, "rev-parse", "HEAD~1")
    monkeypatch.chdir(repo)
    out = CliRunner().invoke(cli, [
        "bisect", "--good", "HEAD~3", "--bad", "main", "--repeats", "2", "--sample-hz", "20",
        "--max-increase", "25%",
        "--json", "--db", str(tmp_path / "runs.db"), "--", sys.executable, "-S", "work.py",
    ])  # fmt: skip
    assert out.exit_code == 0, out.output
    result = json.loads(out.stdout)
    assert result["outcome"] == "found"
    assert result["first_bad"] == slower
    assert result["first_bad_subject"] == "more work per step"
    assert result["endpoints"]["outcome"] == "fail"
    assert result["steps"], "git bisect chose at least one commit to measure"
    for step in result["steps"]:
        assert len(step["runs"]) == 2
        is_after = subprocess.run(["git", "merge-base", "--is-ancestor", slower, step["commit"]],
                                  cwd=repo, check=False).returncode == 0  # fmt: skip
        assert step["action"] == ("bad" if is_after else "good")
    # the work tree is back on its branch, and no bisect is left behind
    assert _git(repo, "symbolic-ref", "--short", "HEAD") == "main"
    assert subprocess.run(["git", "bisect", "log"], cwd=repo, capture_output=True,
                          check=False).returncode != 0  # fmt: skip


def test_inconclusive_steps_are_skipped_and_reported_not_guessed(repo: Path) -> None:
    """A gate that cannot tell at the middle commits: git is told skip, the range is named."""
    git = GitRepo(repo)
    head = _git(repo, "rev-parse", "HEAD")
    good = _git(repo, "rev-parse", "HEAD~3")
    spread = {good: [100.0, 101.0], head: [200.0, 201.0]}  # the middle: noisy, 100 … 300

    def measure(commit: str) -> RunRecord:
        values = spread.get(commit, [100.0, 300.0])
        energy = values[len(calls.setdefault(commit, [])) % 2]
        calls[commit].append(energy)
        return RunRecord.from_dict(_record(f"{commit[:6]}{len(calls[commit])}", energy))

    calls: dict[str, list[float]] = {}
    result = bisect(git, "HEAD~3", "HEAD", measure, runs=2)
    assert result.outcome == "undecided"
    assert result.first_bad is None
    assert {s.action for s in result.steps} == {"skip"}
    assert all("INCONCLUSIVE" in s.why for s in result.steps)
    assert head in result.candidates and len(result.candidates) >= 2
    assert "undecided" in result.lines()[-1]
    assert _git(repo, "rev-parse", "HEAD") == head


def test_a_dirty_tree_or_a_bad_ref_is_refused_and_left_alone(repo: Path) -> None:
    (repo / "work.txt").write_text("9")
    git = GitRepo(repo)
    with pytest.raises(ConfigError, match="uncommitted changes"):
        bisect(git, "HEAD~3", "HEAD", lambda c: pytest.fail("measured"))
    assert (repo / "work.txt").read_text() == "9"
    _git(repo, "checkout", "work.txt")
    with pytest.raises(ConfigError, match="names no commit"):
        bisect(git, "nope", "HEAD", lambda c: pytest.fail("measured"))
    with pytest.raises(ConfigError, match="ancestor"):
        bisect(git, "HEAD", "HEAD~2", lambda c: pytest.fail("measured"))


def _record(run_id: str, energy_j: float) -> dict[str, object]:
    from tests.run_records import record

    return record(energy_j, rel=0.01, run_id=run_id)

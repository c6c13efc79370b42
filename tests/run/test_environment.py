from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from greenml.run.environment import capture_environment, git_state, installed_packages


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def test_git_commit_and_dirty_flag(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "train.py").write_text("print(1)\n")
    git(tmp_path, "add", "train.py")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "first")
    clean = git_state(str(tmp_path))
    assert clean is not None
    assert len(clean["commit"]) == 40
    assert clean["dirty"] is False
    (tmp_path / "train.py").write_text("print(2)\n")
    dirty = git_state(str(tmp_path))
    assert dirty is not None and dirty["dirty"] is True
    assert dirty["commit"] == clean["commit"]


def test_outside_a_work_tree_there_is_no_git_state(tmp_path: Path) -> None:
    assert git_state(str(tmp_path)) is None


def test_packages_are_listed_with_a_hash_of_the_list() -> None:
    packages = installed_packages()
    dists = packages["distributions"]
    assert "greenml" in dists and "sqlalchemy" in dists
    listing = "\n".join(f"{n}=={v}" for n, v in sorted(dists.items()))
    assert packages["sha256"] == hashlib.sha256(listing.encode()).hexdigest()
    assert packages["count"] == len(dists)


def test_hostname_can_be_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    assert capture_environment(include_hostname=False)["hostname"] is None
    monkeypatch.setenv("GREENML_NO_HOSTNAME", "1")
    assert capture_environment()["hostname"] is None
    monkeypatch.delenv("GREENML_NO_HOSTNAME")
    env = capture_environment()
    assert env["hostname"]
    assert env["python"]["version"].count(".") == 2
    assert env["os"]["system"]
    assert env["cpu"]["logical_cores"] >= 1
    assert isinstance(env["gpu"], dict)  # {} without NVML, driver and GPUs with it

"""The few git commands ``greenml bisect`` needs, run in one work tree (real ``git``)."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from greenml.errors import ConfigError

_FIRST_BAD = re.compile(r"^([0-9a-f]{7,64}) is the first bad commit", re.MULTILINE)
_ONLY_SKIPPED = "There are only 'skip'ped commits left to test"
_COMMIT = re.compile(r"^([0-9a-f]{40,64})\b", re.MULTILINE)


@dataclass(frozen=True)
class BisectOutcome:
    """What ``git bisect`` said after a step: the first bad commit, or the commits left."""

    first_bad: str | None = None
    candidates: tuple[str, ...] = ()

    @property
    def done(self) -> bool:
        return self.first_bad is not None or bool(self.candidates)


class GitRepo:
    """A git work tree, driven through the ``git`` program."""

    def __init__(self, path: Path) -> None:
        self.path = path
        if self.run("rev-parse", "--is-inside-work-tree", check=False) != "true":
            raise ConfigError(f"{path} is not inside a git work tree")

    def run(self, *args: str, check: bool = True) -> str:
        """``git ARGS`` in the work tree; its stdout, stripped (``check``: fail on exit ≠ 0)."""
        try:
            done = subprocess.run(
                ["git", *args], cwd=self.path, capture_output=True, text=True, check=False,
                timeout=120,
            )  # fmt: skip
        except FileNotFoundError as exc:
            raise ConfigError("git is not installed (greenml bisect drives git bisect)") from exc
        except subprocess.TimeoutExpired as exc:
            raise ConfigError(f"git {' '.join(args)} did not finish in 120 s") from exc
        if check and done.returncode != 0:
            why = (done.stderr or done.stdout).strip().splitlines()
            raise ConfigError(f"git {' '.join(args)} failed: {why[-1] if why else done.returncode}")
        return done.stdout.strip()

    def commit(self, ref: str) -> str:
        """The full hash of ``ref``; a ref that names no commit is an error."""
        found = self.run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        if not found:
            raise ConfigError(f"{ref!r} names no commit in {self.path}")
        return found

    def subject(self, commit: str) -> str:
        return self.run("log", "-1", "--format=%s", commit)

    def head(self) -> str:
        """The branch checked out, or the commit when HEAD is detached."""
        return self.run("symbolic-ref", "-q", "--short", "HEAD", check=False) or self.commit("HEAD")

    def require_clean(self) -> None:
        """Refuse a tree with uncommitted changes to tracked files, or a bisect under way."""
        if self.run("status", "--porcelain", "--untracked-files=no"):
            raise ConfigError(f"{self.path} has uncommitted changes: commit or stash them first")
        if self.run("bisect", "log", check=False):
            raise ConfigError(f"a git bisect is under way in {self.path}: git bisect reset first")

    def is_ancestor(self, old: str, new: str) -> bool:
        done = subprocess.run(["git", "merge-base", "--is-ancestor", old, new], cwd=self.path,
                              capture_output=True, check=False)  # fmt: skip
        return done.returncode == 0

    def checkout(self, ref: str) -> None:
        self.run("checkout", "-q", "--detach", ref)

    def bisect(self, *args: str) -> BisectOutcome:
        """``git bisect ARGS``, and whether it has named the first bad commit (or given up)."""
        out = self.run("bisect", *args, check=False)  # exit 2 once only skipped ones are left
        if found := _FIRST_BAD.search(out):
            return BisectOutcome(first_bad=self.commit(found.group(1)))
        if _ONLY_SKIPPED in out:
            return BisectOutcome(candidates=tuple(_COMMIT.findall(out.split(_ONLY_SKIPPED)[1])))
        if "Bisecting:" not in out:
            raise ConfigError(f"git bisect {' '.join(args)} said: {out or 'nothing'}")
        return BisectOutcome()

"""``greenml bisect``: find the commit that made a workload use more energy, with the gate.

Method. The command is measured ``runs`` times at the good commit (the
baseline) and at the bad one; when the gate (:func:`greenml.report.gate.check`)
does not say FAIL for bad against good, there is nothing to bisect and no
commit is named. Otherwise ``git bisect`` (the real one) chooses each commit
to test; at each, the command is measured ``runs`` times and judged against
the good commit's runs with the same gate:

- ``pass`` → ``git bisect good``; ``fail`` → ``git bisect bad``;
- ``inconclusive`` (above the allowance only within the uncertainty), or a
  run that exited non-zero → ``git bisect skip``: reported, never guessed.

When only skipped commits are left, git names the range the first bad commit
lies in, and so does the result. The work tree is put back where it was.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from greenml.diagnose.git_repo import BisectOutcome, GitRepo
from greenml.errors import ConfigError
from greenml.record.run_record import RunRecord
from greenml.report.gate import Verdict, check

Action = Literal["good", "bad", "skip"]
ACTIONS: dict[str, Action] = {"pass": "good", "fail": "bad", "inconclusive": "skip"}


@dataclass(frozen=True)
class BisectStep:
    """One commit measured: what the gate said, and what git was told."""

    commit: str
    subject: str
    action: Action
    why: str
    run_ids: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"commit": self.commit, "subject": self.subject, "action": self.action,
                "why": self.why, "runs": list(self.run_ids)}  # fmt: skip

    def line(self) -> str:
        return f"{self.commit[:12]} {self.action:<4} {self.subject[:50]} — {self.why}"


@dataclass(frozen=True)
class BisectResult:
    """The first bad commit, or the commits it may be, and how each step was decided."""

    good: str
    bad: str
    endpoints: Verdict
    steps: tuple[BisectStep, ...] = ()
    first_bad: str | None = None
    first_bad_subject: str | None = None
    candidates: tuple[str, ...] = field(default=())

    @property
    def outcome(self) -> Literal["found", "no-regression", "undecided"]:
        if self.first_bad is not None:
            return "found"
        return "no-regression" if self.endpoints.outcome == "pass" else "undecided"

    def lines(self) -> list[str]:
        """The report printed by ``greenml bisect``."""
        out = [f"good {self.good[:12]} → bad {self.bad[:12]}: {self.endpoints.line()}"]
        out += [f"  {s.line()}" for s in self.steps]
        if self.first_bad is not None:
            subject = self.first_bad_subject or ""
            out.append(f"first bad commit: {self.first_bad} {subject}".rstrip())
        elif self.candidates:
            out.append("undecided: the first bad commit is one of "
                       f"{', '.join(c[:12] for c in self.candidates)} (steps skipped as "
                       "inconclusive; more --repeats per step may decide it)")  # fmt: skip
        elif self.endpoints.outcome == "pass":
            out.append("no regression to bisect: the bad commit is within the allowance")
        else:
            out.append("undecided: the bad commit is not surely worse than the good one "
                       "(more --repeats per step may decide it)")  # fmt: skip
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "good": self.good,
            "bad": self.bad,
            "endpoints": self.endpoints.to_dict(),
            "steps": [s.to_dict() for s in self.steps],
            "first_bad": self.first_bad,
            "first_bad_subject": self.first_bad_subject,
            "candidates": list(self.candidates),
        }


Measure = Callable[[str], RunRecord]
"""Run the command once at the checked-out commit (its hash given) and return its record."""


def bisect(
    repo: GitRepo,
    good: str,
    bad: str,
    measure: Measure,
    *,
    runs: int = 3,
    max_increase_rel: float = 0.05,
    compare: str = "auto",
    unit: str | None = None,
    on_step: Callable[[BisectStep], None] | None = None,
) -> BisectResult:
    """Bisect ``good..bad`` with the energy gate as the test; the tree is restored after."""
    if runs < 1:
        raise ConfigError(f"--repeats must be at least 1, got {runs}")
    repo.require_clean()
    good_c, bad_c = repo.commit(good), repo.commit(bad)
    if good_c == bad_c or not repo.is_ancestor(good_c, bad_c):
        raise ConfigError(f"{good!r} must be an ancestor of {bad!r} (and not the same commit)")
    original = repo.head()
    started = False

    def judge(records: Sequence[RunRecord], against: Sequence[RunRecord]) -> Verdict:
        return check([r.to_dict() for r in against], [r.to_dict() for r in records],
                     max_increase_rel, unit=unit, compare=compare)  # fmt: skip

    try:
        repo.checkout(good_c)
        baseline = _measured(measure, good_c, runs, "good")
        repo.checkout(bad_c)
        endpoints = judge(_measured(measure, bad_c, runs, "bad"), baseline)
        result = BisectResult(good=good_c, bad=bad_c, endpoints=endpoints)
        if endpoints.outcome != "fail":
            return result
        started = True
        outcome = repo.bisect("start", bad_c, good_c)
        steps: list[BisectStep] = []
        while not outcome.done:
            commit = repo.commit("HEAD")
            records = [measure(commit) for _ in range(runs)]
            step = _step(repo, commit, records, baseline, judge)
            steps.append(step)
            if on_step is not None:
                on_step(step)
            outcome = repo.bisect(step.action)
        return _finish(repo, result, steps, outcome)
    finally:
        if started:
            repo.run("bisect", "reset", original)
        else:
            repo.run("checkout", "-q", original)


def _measured(measure: Measure, commit: str, runs: int, side: str) -> list[RunRecord]:
    records = [measure(commit) for _ in range(runs)]
    failed = [r.id[:8] for r in records if r.exit_code != 0]
    if failed:
        raise ConfigError(f"the command failed at the {side} commit {commit[:12]} "
                          f"(run(s) {', '.join(failed)}): nothing to compare")  # fmt: skip
    return records


def _step(
    repo: GitRepo, commit: str, records: Sequence[RunRecord], baseline: Sequence[RunRecord],
    judge: Callable[[Sequence[RunRecord], Sequence[RunRecord]], Verdict],
) -> BisectStep:  # fmt: skip
    ids = tuple(r.id for r in records)
    failed = [r for r in records if r.exit_code != 0]
    if failed:
        why = f"{len(failed)} of {len(records)} run(s) exited non-zero ({failed[0].exit_code})"
        return BisectStep(commit, repo.subject(commit), "skip", why, ids)
    verdict = judge(records, baseline)
    return BisectStep(commit, repo.subject(commit), ACTIONS[verdict.outcome], verdict.line(), ids)


def _finish(
    repo: GitRepo, result: BisectResult, steps: list[BisectStep], outcome: BisectOutcome
) -> BisectResult:
    subject = repo.subject(outcome.first_bad) if outcome.first_bad else None
    return BisectResult(
        good=result.good, bad=result.bad, endpoints=result.endpoints, steps=tuple(steps),
        first_bad=outcome.first_bad, first_bad_subject=subject, candidates=outcome.candidates,
    )  # fmt: skip

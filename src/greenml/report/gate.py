"""The CI energy gate: did energy per unit of work rise by more than allowed, beyond noise?

Definition. Each side (baseline, candidate: one run or several) gives its mean
energy per unit of work — per run when no run on either side states work —
with a relative uncertainty ``u`` = the larger of the runs' stated measurement
uncertainty (``energy.uncertainty_rel``) and the standard error of the mean
between runs (:mod:`greenml.report.compare`). With ``ratio = C / B``:

- the increase is ``r = ratio − 1``;
- its uncertainty is ``u_r = ratio × √(u_B² + u_C²)``;
- the gate **fails** when ``r − u_r > max_increase_rel``: the increase exceeds
  the allowance even at the low end of its uncertainty. An increase above the
  allowance that its uncertainty could explain passes, and says so.

Same setup. When every run on both sides was measured by the same devices
with the same methods (one CI runner type, the same CPU model), the model's
systematic error — a TDP that is 30 % off — is the same on both sides and
cancels in ``C / B``. With at least two runs per side, ``u_r`` then comes from
the run-to-run spread alone: ``ratio × √(s_B² + s_C²)``, the standard errors of
the two means. With one run on a side the spread is unknown and the
conservative rule above applies.

Runs must have completed. Units of work must agree on both sides; runs that
state work on one side only, or in different units, are an error, not a guess.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from greenml.errors import ConfigError
from greenml.report.compare import (
    Change,
    Estimate,
    change,
    group_estimate,
    run_figures,
    same_setup,
)
from greenml.report.quantities import energy
from greenml.report.work import common_unit, display_per, per_label

Outcome = Literal["pass", "noise", "fail"]
_THRESHOLD = re.compile(r"^\+?\s*(\d+(?:\.\d*)?|\.\d+)\s*(%?)$")


@dataclass(frozen=True)
class Verdict:
    """The gate's answer and the figures behind it.

    Attributes:
        outcome: ``pass`` (within the allowance), ``noise`` (above it only within
            the uncertainty: passes) or ``fail``.
        max_increase_rel: The allowance (0.05 = +5 %).
        unit: The unit of work, ``None`` when compared per run.
        baseline: The baseline's mean energy (J per unit of work, or per run).
        candidate: The candidate's.
        change: ``candidate ÷ baseline`` and the relative increase with its uncertainty.
        baseline_runs: Ids of the baseline runs.
        candidate_runs: Ids of the candidate runs.
    """

    outcome: Outcome
    max_increase_rel: float
    unit: str | None
    baseline: Estimate
    candidate: Estimate
    change: Change
    baseline_runs: tuple[str, ...]
    candidate_runs: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return self.outcome != "fail"

    def line(self) -> str:
        """The one-line verdict, e.g. ``greenml check: FAIL energy per 1000 samples +12 % …``."""
        per = display_per(self.unit)
        moved = self.change
        increase = f"{moved.change_rel * 100:+.1f} % ± {moved.uncertainty_rel * 100:.1f} %"
        sides = (
            f"baseline {energy(self.baseline.value * per)}, {_runs(self.baseline.n)}; "
            f"candidate {energy(self.candidate.value * per)}, {_runs(self.candidate.n)}"
        )
        allowed = f"+{self.max_increase_rel * 100:g} % allowed"
        tail = {
            "pass": f"within {allowed}",
            "noise": f"above {allowed} only within its uncertainty",
            "fail": f"> {allowed} beyond its uncertainty",
        }[self.outcome]
        word = "FAIL" if self.outcome == "fail" else "PASS"
        return f"greenml check: {word} energy {per_label(self.unit)} {increase} ({sides}) {tail}"

    def to_dict(self) -> dict[str, Any]:
        """The verdict as JSON-ready figures (energy in J per unit of work, or per run)."""
        return {
            "outcome": self.outcome,
            "passed": self.passed,
            "max_increase_rel": self.max_increase_rel,
            "unit": self.unit,
            "increase_rel": self.change.change_rel,
            "increase_uncertainty_rel": self.change.uncertainty_rel,
            "baseline_j_per_unit": self.baseline.value,
            "baseline_uncertainty_rel": self.baseline.uncertainty_rel,
            "candidate_j_per_unit": self.candidate.value,
            "candidate_uncertainty_rel": self.candidate.uncertainty_rel,
            "baseline_runs": list(self.baseline_runs),
            "candidate_runs": list(self.candidate_runs),
        }


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def parse_threshold(text: str) -> float:
    """An allowed increase as a fraction: ``5%`` and ``5`` both mean 0.05.

    A bare number is read as percent. One below 1 without ``%`` (``0.05``) is
    ambiguous — 5 % or 0.05 %? — and refused; write ``5%`` or ``0.05%``.

    Raises:
        ConfigError: Not a non-negative number, or ambiguous.
    """
    found = _THRESHOLD.match(text.strip())
    if not found:
        raise ConfigError(f"--max-increase {text!r}: write a percentage such as 5% or 5")
    value, sign = float(found.group(1)), found.group(2)
    if not sign and 0 < value < 1:
        raise ConfigError(
            f"--max-increase {text!r} is ambiguous: write {value * 100:g}% or {value:g}%"
        )
    return value / 100.0


def check(
    baseline: Sequence[Mapping[str, Any]],
    candidate: Sequence[Mapping[str, Any]],
    max_increase_rel: float,
    unit: str | None = None,
) -> Verdict:
    """Compare the candidate runs' energy per unit of work with the baseline's.

    Args:
        baseline: Run records of the reference (e.g. the main branch).
        candidate: Run records of the change under test.
        max_increase_rel: The allowed increase as a fraction (0.05 = +5 %).
        unit: The unit of work when runs state several.

    Raises:
        ConfigError: A side is empty, a run did not complete or lacks its energy
            uncertainty, units of work differ, or the allowance is negative.
    """
    if not math.isfinite(max_increase_rel) or max_increase_rel < 0:
        raise ConfigError(f"the allowed increase must be 0 or more, not {max_increase_rel}")
    if not baseline or not candidate:
        raise ConfigError("the energy gate needs at least one baseline and one candidate run")
    common = common_unit({"baseline": baseline, "candidate": candidate}, unit)
    sides = []
    for records in (baseline, candidate):
        found = group_estimate([run_figures(r, common) for r in records], "energy")
        if isinstance(found, str):  # pragma: no cover - energy is always known or an error
            raise ConfigError(found)
        sides.append(found)
    base, cand = sides
    moved = change(base, cand, same_setup([*baseline, *candidate]))
    if moved.change_rel <= max_increase_rel:
        outcome: Outcome = "pass"
    elif moved.change_rel - moved.uncertainty_rel > max_increase_rel:
        outcome = "fail"
    else:
        outcome = "noise"
    return Verdict(
        outcome, max_increase_rel, common, base, cand, moved,
        tuple(str(r.get("id")) for r in baseline), tuple(str(r.get("id")) for r in candidate),
    )  # fmt: skip

"""The CI energy gate: did energy per unit of work rise by more than allowed, beyond noise?

Definition. Each side (baseline, candidate: one run or several) gives its mean
energy per unit of work — per run when no run on either side states work —
with a relative uncertainty ``u`` = the larger of the runs' stated measurement
uncertainty (``energy.uncertainty_rel``) and the standard error of the mean
between runs (:mod:`greenml.report.compare`). With ``ratio = C / B``:

- the increase is ``r = ratio − 1``;
- its uncertainty is ``u_r = ratio × √(u_B² + u_C²)``;
- the gate **passes** when ``r ≤ max_increase_rel``;
- it **fails** when ``r − u_r > max_increase_rel``: the increase exceeds the
  allowance even at the low end of its uncertainty;
- otherwise it is **inconclusive**: above the allowance, but only within its
  uncertainty. The verdict then says how many runs a side would decide it
  (:func:`runs_to_decide`): a CI gate that says PASS for +127 % ± 159 % from
  one run a side has measured nothing.

Same setup. When every run on both sides was measured by the same devices
with the same methods (one CI runner type, the same CPU model), the model's
systematic error — a TDP that is 30 % off — is the same on both sides and
cancels in ``C / B``. With at least two runs per side, ``u_r`` then comes from
the run-to-run spread alone: ``ratio × √(s_B² + s_C²)``, the standard errors of
the two means. With one run on a side the spread is unknown and the
conservative rule above applies.

Which energy. On a shared machine the process-scope CPU model's static part
— the idle floor charged over the wall-clock time — grows when neighbours slow
the work down, though the work did not change. When every run on both sides
records its energy's parts (``energy.components.*.devices.*.parts``), the gate
compares by default what the work itself caused: the total less the
``static`` parts (the CPU's dynamic energy from its CPU-seconds, GPU and DRAM
as measured). The verdict says which it compared; ``compare="total"`` forces
the total.

Runs must have completed. Units of work must agree on both sides; runs that
state work on one side only, or in different units, are an error, not a guess.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Literal

from greenml.errors import ConfigError
from greenml.measure.measurement import DYNAMIC, STATIC, DeviceEnergy, Measurement
from greenml.quantities import energy
from greenml.report.compare import (
    Amount,
    Change,
    Estimate,
    RunFigures,
    change,
    group_estimate,
    run_figures,
    same_setup,
)
from greenml.report.work import common_unit, display_per, per_label

Outcome = Literal["pass", "inconclusive", "fail"]
Compared = Literal["total", "dynamic"]
COMPARE_CHOICES = ("auto", "total", "dynamic")
_DYNAMIC_LABEL = "dynamic part: the total less the CPU's static idle-floor share"
_POWER_Z = 1.0 + 0.84  # the gate's one-sigma rule, at 80 % power
_THRESHOLD = re.compile(r"^\+?\s*(\d+(?:\.\d*)?|\.\d+)\s*(%?)$")


@dataclass(frozen=True)
class Verdict:
    """The gate's answer and the figures behind it.

    Attributes:
        outcome: ``pass`` (within the allowance), ``inconclusive`` (above it
            only within the uncertainty) or ``fail``.
        max_increase_rel: The allowance (0.05 = +5 %).
        unit: The unit of work, ``None`` when compared per run.
        baseline: The baseline's mean energy (J per unit of work, or per run).
        candidate: The candidate's.
        change: ``candidate ÷ baseline`` and the relative increase with its uncertainty.
        baseline_runs: Ids of the baseline runs.
        candidate_runs: Ids of the candidate runs.
        compared: ``total`` energy, or its ``dynamic`` part (the total less the
            static idle-floor share, which grows with busy neighbours).
        runs_needed: For an inconclusive verdict, the runs a side that would
            decide it (:func:`runs_to_decide`); ``None`` otherwise, or when more
            runs cannot (the measurement's systematic error is larger than the margin).
    """

    outcome: Outcome
    max_increase_rel: float
    unit: str | None
    baseline: Estimate
    candidate: Estimate
    change: Change
    baseline_runs: tuple[str, ...]
    candidate_runs: tuple[str, ...]
    compared: Compared = "total"
    runs_needed: int | None = None

    @property
    def passed(self) -> bool:
        """Only a clear pass: an inconclusive verdict has not shown the energy is fine."""
        return self.outcome == "pass"

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
            "inconclusive": f"above {allowed} only within its uncertainty: {self.decide()}",
            "fail": f"> {allowed} beyond its uncertainty",
        }[self.outcome]
        word = self.outcome.upper()
        what = f"energy ({_DYNAMIC_LABEL})" if self.compared == "dynamic" else "energy"
        return f"greenml check: {word} {what} {per_label(self.unit)} {increase} ({sides}) {tail}"

    def decide(self) -> str:
        """What would decide an inconclusive verdict, in words."""
        if self.runs_needed is not None:
            return f"about {self.runs_needed} runs a side would decide it"
        return (
            "more runs cannot decide it (the measurements' stated uncertainty is larger "
            "than the margin): measure both sides on the same machine and methods"
        )

    def to_dict(self) -> dict[str, Any]:
        """The verdict as JSON-ready figures (energy in J per unit of work, or per run)."""
        return {
            "outcome": self.outcome,
            "passed": self.passed,
            "compared": self.compared,
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
            "runs_needed_per_side": self.runs_needed,
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


def dynamic_energy(record: Mapping[str, Any]) -> Amount | None:
    """What the work itself caused: the energy less its ``static`` parts, with its uncertainty.

    ``None`` when no device of the run splits its energy (records of machine-scope
    or counter measurements, and every record stored before parts existed).
    """
    block = record.get("energy")
    if not isinstance(block, Mapping) or not _has_static_part(block):
        return None
    try:
        whole = Measurement.from_dict("run", datetime.now(tz=timezone.utc), 0.0, dict(block))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None  # a malformed block: the total is checked (and refused) elsewhere
    for component in whole.components.values():
        for key, device in component.devices.items():
            dynamic = device.part_j(DYNAMIC)
            if dynamic is not None:
                component.devices[key] = DeviceEnergy(
                    dynamic, device.method, device.uncertainty_rel, device.name
                )
    return Amount(whole.total_j, whole.uncertainty_rel)


def _has_static_part(block: Mapping[str, Any]) -> bool:
    components = block.get("components")
    if not isinstance(components, Mapping):
        return False
    return any(
        isinstance(device, Mapping)
        and isinstance(device.get("parts"), Mapping)
        and STATIC in device["parts"]
        and DYNAMIC in device["parts"]
        for component in components.values()
        if isinstance(component, Mapping)
        for device in (component.get("devices") or {}).values()
    )


def _figures(
    records: Sequence[Mapping[str, Any]], unit: str | None, compared: Compared
) -> list[RunFigures]:
    figures = [run_figures(r, unit) for r in records]
    if compared == "total":
        return figures
    out = []
    for record, figure in zip(records, figures, strict=True):
        dynamic = dynamic_energy(record)
        assert dynamic is not None  # chosen only when every run has it
        out.append(replace(figure, amounts={**figure.amounts, "energy": dynamic}))
    return out


def _which(records: Sequence[Mapping[str, Any]], compare: str) -> Compared:
    """The energy the gate compares; ``auto``: the dynamic part when every run has it."""
    if compare not in COMPARE_CHOICES:
        raise ConfigError(f"compare must be one of {', '.join(COMPARE_CHOICES)}, not {compare!r}")
    if compare == "total":
        return "total"
    missing = [str(r.get("id")) for r in records if dynamic_energy(r) is None]
    if not missing:
        return "dynamic"
    if compare == "dynamic":
        raise ConfigError(
            f"run(s) {', '.join(missing)} record no dynamic/static split of their energy "
            "(only the process-scope CPU model has one): compare the total"
        )
    return "total"


def check(
    baseline: Sequence[Mapping[str, Any]],
    candidate: Sequence[Mapping[str, Any]],
    max_increase_rel: float,
    unit: str | None = None,
    compare: str = "auto",
) -> Verdict:
    """Compare the candidate runs' energy per unit of work with the baseline's.

    Args:
        baseline: Run records of the reference (e.g. the main branch).
        candidate: Run records of the change under test.
        max_increase_rel: The allowed increase as a fraction (0.05 = +5 %).
        unit: The unit of work when runs state several.
        compare: ``total``, ``dynamic`` (the total less the static idle-floor
            share), or ``auto``: ``dynamic`` when every run records it.

    Raises:
        ConfigError: A side is empty, a run did not complete or lacks its energy
            uncertainty, units of work differ, the allowance is negative, or
            ``dynamic`` was asked of runs without it.
    """
    if not math.isfinite(max_increase_rel) or max_increase_rel < 0:
        raise ConfigError(f"the allowed increase must be 0 or more, not {max_increase_rel}")
    if not baseline or not candidate:
        raise ConfigError("the energy gate needs at least one baseline and one candidate run")
    common = common_unit({"baseline": baseline, "candidate": candidate}, unit)
    compared = _which([*baseline, *candidate], compare)
    sides = []
    for records in (baseline, candidate):
        found = group_estimate(_figures(records, common, compared), "energy")
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
        outcome = "inconclusive"
    needed = None
    if outcome == "inconclusive":
        needed = runs_to_decide(base, cand, moved, max_increase_rel,
                                same_setup([*baseline, *candidate]))  # fmt: skip
    return Verdict(
        outcome, max_increase_rel, common, base, cand, moved,
        tuple(str(r.get("id")) for r in baseline), tuple(str(r.get("id")) for r in candidate),
        compared, needed,
    )  # fmt: skip


def _per_run_spread(side: Estimate) -> float:
    """One run's relative spread: the observed one (SEM × √n), else the stated uncertainty."""
    if side.n >= 2 and side.spread_rel > 0:
        return side.spread_rel * math.sqrt(side.n)
    return side.measurement_rel


def runs_to_decide(
    base: Estimate, cand: Estimate, moved: Change, max_increase_rel: float, same: bool
) -> int | None:
    """Runs a side that would decide an increase this far above the allowance.

    Power calculation from the observed spread: with ``n`` runs a side the
    increase's uncertainty is ``ratio × √2 × σ / √n`` (σ: one run's relative
    spread, the larger side's; the stated uncertainty where one run gives no
    spread). The gate decides when the margin ``r − allowance`` exceeds it, with
    80 % power: ``n = ⌈2 × ((1 + 0.84) × ratio × σ / margin)²⌉``, at least 2.
    Without the same setup the measurements' systematic error does not shrink
    with more runs: ``None`` when it alone is larger than the margin.
    """
    margin = moved.change_rel - max_increase_rel
    if margin <= 0:
        return None
    ratio = abs(moved.ratio)
    if not same and ratio * math.hypot(base.measurement_rel, cand.measurement_rel) >= margin:
        return None
    sigma = max(_per_run_spread(base), _per_run_spread(cand))
    return max(2, math.ceil(2.0 * (_POWER_Z * ratio * sigma / margin) ** 2))

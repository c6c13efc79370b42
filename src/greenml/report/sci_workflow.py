"""The SCI for AI consumer unit "per workflow execution": runs that carry a ``workflow`` block.

Each run whose record has a ``workflow`` block (model calls made inside a
``greenml.Run``, :mod:`greenml.llm.remote`) is ``executions`` workflow executions.
The operational carbon O of the score adds the model calls to the run's own
(local compute, measured): the calls a greenml proxy measured and the calls
estimated from the model's size stay apart in every table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from greenml.report import sigfig as fmt
from greenml.report.model import Table

WORKFLOW_UNITS = frozenset({"workflow", "workflows", "workflow execution", "workflow executions"})


def is_workflow_unit(per: str) -> bool:
    """``--per workflow`` (or ``workflow execution``)."""
    return " ".join(per.lower().split()) in WORKFLOW_UNITS


@dataclass
class PartSum:
    """Summed measured or estimated model calls over the runs."""

    calls: int = 0
    energy_j: float = 0.0
    uncertainty_j: float = 0.0
    co2eq_g: float = 0.0
    co2eq_unknown_calls: int = 0
    water_ml: float = 0.0

    def add(self, part: Any) -> None:
        if not isinstance(part, dict):
            return
        self.calls += _int(part.get("calls"))
        self.energy_j += _num(part.get("energy_j"))
        self.uncertainty_j += _num(part.get("uncertainty_j"))
        self.co2eq_g += _num(part.get("co2eq_g"))
        self.co2eq_unknown_calls += _int(part.get("co2eq_unknown_calls"))
        self.water_ml += _num(part.get("water_ml"))

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class WorkflowSum:
    """The workflow blocks of a run set, summed."""

    executions: int = 0
    runs: list[str] = field(default_factory=list)
    measured: PartSum = field(default_factory=PartSum)
    estimated: PartSum = field(default_factory=PartSum)
    tool_calls: int = 0

    @property
    def co2eq_g(self) -> float:
        return self.measured.co2eq_g + self.estimated.co2eq_g

    @property
    def energy_j(self) -> float:
        return self.measured.energy_j + self.estimated.energy_j

    def to_dict(self) -> dict[str, Any]:
        return {
            "executions": self.executions,
            "runs": self.runs,
            "tool_calls": self.tool_calls,
            "measured": self.measured.to_dict(),
            "estimated": self.estimated.to_dict(),
        }


def workflow_sum(records: Sequence[dict[str, Any]]) -> WorkflowSum:
    """Sum the ``workflow`` blocks of ``records`` (records without one are skipped)."""
    total = WorkflowSum()
    for record in records:
        block = record.get("workflow")
        if not isinstance(block, dict):
            continue
        total.executions += _int(block.get("executions", 1))
        total.runs.append(str(record.get("id")))
        total.measured.add(block.get("measured"))
        total.estimated.add(block.get("estimated"))
        total.tool_calls += _int(block.get("tool_calls"))
    return total


def parts_table(wf: WorkflowSum, local_g: float | None, local_j: float, count: float) -> Table:
    """Measured and estimated parts of O, in all and per workflow execution."""

    def row(name: str, energy_j: float, grams: float | None, how: str) -> list[str]:
        per = "unknown" if grams is None else fmt.sig(grams / count, 3)
        total = "unknown" if grams is None else fmt.sig(grams, 3)
        return [name, fmt.energy(energy_j), total, per, how]

    m, e = wf.measured, wf.estimated
    rows = [
        row("local compute (the runs)", local_j, local_g, "measured by greenml (the runs' meters)"),
        row(
            f"model calls, measured ({m.calls})",
            m.energy_j,
            m.co2eq_g,
            f"a greenml proxy's usage.energy, ± {fmt.energy(m.uncertainty_j)}",
        ),
        row(
            f"model calls, estimated ({e.calls})",
            e.energy_j,
            e.co2eq_g,
            f"model size × stated hardware (greenml.llm.remote), ± {fmt.energy(e.uncertainty_j)}",
        ),
    ]
    unknown = m.co2eq_unknown_calls + e.co2eq_unknown_calls
    note = f"{unknown} calls without a known grid intensity are not in CO2eq." if unknown else ""
    return Table(
        ["part", "energy", "CO2eq (g)", "g per workflow", "method"],
        rows,
        title="Per workflow execution: measured and estimated parts",
        note=note,
    )


def amend_terms(table: Table, wf: WorkflowSum, e_kwh: float) -> None:
    """E and O of the terms table with the workflows' model calls added (rows 0 and 2)."""
    calls = wf.measured.calls + wf.estimated.calls
    e_row, o_row = table.rows[0], table.rows[2]
    e_row[1] = fmt.kwh(e_kwh * 3.6e6, 3)
    e_row[2] += (
        f"; plus {calls} model calls: {fmt.energy(wf.measured.energy_j)} measured by a "
        f"greenml proxy, {fmt.energy(wf.estimated.energy_j)} estimated (see Workflow)"
    )
    o_row[2] += "; plus the model calls' CO2eq at their providers' grid (see Workflow)"


def _num(value: Any) -> float:
    """A finite number ≥ 0 from a record, else 0 (records are read, not trusted)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else 0.0


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

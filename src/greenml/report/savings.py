"""Savings report: baseline against optimized runs — the money first, and whether it is real.

Each group (one run or several) gives its mean energy, CO2eq and cost per unit
of work (per run when no run states work), with the uncertainty rule of
:mod:`greenml.report.compare`: the larger of the runs' stated measurement
uncertainty and the standard error between runs. A saving is **significant**
only when it exceeds its combined uncertainty (both groups in quadrature).

Per run and per year: the saving per unit of work × the work of one run
(``work_per_run``, default the baseline runs' mean) × ``runs_per_year``.
Payback: ``effort_hours × hourly_rate_usd ÷ yearly $ saving``, its relative
uncertainty that of the yearly saving (the effort is taken as exact).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from greenml.errors import ConfigError
from greenml.quantities import sig
from greenml.report import savings_sections as text
from greenml.report.compare import (
    METRICS,
    Metric,
    change,
    group_estimate,
    records_of,
    run_figures,
)
from greenml.report.model import Report
from greenml.report.savings_model import Context, Payback, Saving
from greenml.report.work import common_unit, per_label


def payback(effort_usd: float, yearly_usd: float, yearly_uncertainty: float) -> Payback:
    """Months to repay ``effort_usd`` from a yearly saving (``None``: never)."""
    if yearly_usd <= 0:
        return Payback(effort_usd, None, None)
    months = effort_usd / yearly_usd * 12
    return Payback(effort_usd, months, months * yearly_uncertainty / yearly_usd)


def build(
    runs: Any,
    *,
    baseline: Sequence[str],
    optimized: Sequence[str] | None = None,
    runs_per_year: float | None = None,
    work_per_run: float | None = None,
    effort_hours: float | None = None,
    hourly_rate_usd: float | None = None,
    unit: str | None = None,
) -> Report:
    """The savings report of runs (a RunSet or run records) split into two groups.

    Args:
        runs: All runs of the comparison.
        baseline: Ids (or unique prefixes) of the baseline runs.
        optimized: Ids of the optimized runs; default every other run.
        runs_per_year: As :func:`compare`, like the options below.
        work_per_run: Units of work of one run.
        effort_hours: Engineering hours the change took.
        hourly_rate_usd: Cost of one engineering hour.
        unit: The unit of work when runs state several.
    """
    records = records_of(runs)
    base = _pick(records, baseline)
    rest = [r for r in records if r not in base]
    return compare(
        base, _pick(rest, optimized) if optimized else rest,
        runs_per_year=runs_per_year, work_per_run=work_per_run, effort_hours=effort_hours,
        hourly_rate_usd=hourly_rate_usd, unit=unit,
    )  # fmt: skip


def _pick(records: list[dict[str, Any]], ids: Sequence[str]) -> list[dict[str, Any]]:
    out = []
    for prefix in ids:
        found = [r for r in records if str(r["id"]).startswith(prefix.strip().lower())]
        if len(found) != 1:
            raise ConfigError(f"run {prefix!r} matches {len(found)} of the runs given, not one")
        out.append(found[0])
    if not out:
        raise ConfigError("no runs in one of the groups")
    return out


def compare(
    baseline: Sequence[dict[str, Any]],
    optimized: Sequence[dict[str, Any]],
    *,
    runs_per_year: float | None = None,
    work_per_run: float | None = None,
    effort_hours: float | None = None,
    hourly_rate_usd: float | None = None,
    unit: str | None = None,
) -> Report:
    """The savings report of two groups of run records.

    Args:
        baseline: The runs before the change.
        optimized: The runs after it.
        runs_per_year: How often the job runs; needed for yearly figures and payback.
        work_per_run: Units of work of one run (default: the baseline runs' mean).
        effort_hours: Engineering hours the change took (with ``hourly_rate_usd``).
        hourly_rate_usd: Cost of one engineering hour.
        unit: The unit of work when runs state several.

    Raises:
        ConfigError: An empty group, units of work that differ, a run that did
            not complete, or a negative option.
    """
    numbers = {
        "runs_per_year": runs_per_year, "work_per_run": work_per_run,
        "effort_hours": effort_hours, "hourly_rate_usd": hourly_rate_usd,
    }  # fmt: skip
    for name, value in numbers.items():
        if value is not None and value < 0:
            raise ConfigError(f"{name} cannot be negative ({value})")
    if not baseline or not optimized:
        raise ConfigError("a savings report needs baseline and optimized runs")
    common = common_unit({"baseline": baseline, "optimized": optimized}, unit)
    groups = [[run_figures(r, common) for r in group] for group in (baseline, optimized)]
    found: dict[Metric, Saving] = {}
    unknown: dict[Metric, str] = {}
    for metric in METRICS:
        base, new = group_estimate(groups[0], metric), group_estimate(groups[1], metric)
        if isinstance(base, str) or isinstance(new, str):
            unknown[metric] = str(base if isinstance(base, str) else new)
        else:
            found[metric] = Saving(metric, base, new, change(base, new))
    per_run = 1.0
    if common is not None:
        per_run = work_per_run or statistics.fmean(r.work or 0.0 for r in groups[0])
    context = Context(common, per_run, runs_per_year, effort_hours, hourly_rate_usd)
    return _report(baseline, optimized, found, unknown, context)


def _report(
    baseline: Sequence[dict[str, Any]],
    optimized: Sequence[dict[str, Any]],
    found: dict[Metric, Saving],
    unknown: dict[Metric, str],
    ctx: Context,
) -> Report:
    yearly = (ctx.work_per_run * ctx.runs_per_year) if ctx.runs_per_year is not None else None
    cost = found.get("cost")
    back = None
    if cost is not None and yearly is not None and ctx.effort_hours and ctx.hourly_rate_usd:
        effort = ctx.effort_hours * ctx.hourly_rate_usd
        back = payback(effort, cost.value * yearly, cost.uncertainty * yearly)
    data: dict[str, Any] = {
        "unit": ctx.unit, "basis": per_label(ctx.unit), "work_per_run": ctx.work_per_run,
        "runs_per_year": ctx.runs_per_year,
        "baseline_runs": [r["id"] for r in baseline],
        "optimized_runs": [r["id"] for r in optimized],
        "savings": {m: _saving_data(s, ctx.work_per_run, yearly) for m, s in found.items()},
        "unknown": dict(unknown),
        "payback": None if back is None else back.__dict__,
        "equivalences": [],
    }  # fmt: skip
    sections = [text.summary(found, unknown, ctx, yearly, back)]
    sections.append(text.per_unit_section(found, unknown, ctx))
    if yearly is not None:
        eq = text.yearly_equivalences(found, yearly)
        data["equivalences"] = [e.to_json() for e in eq]
        if eq:
            sections.append(text.equivalence_section(eq))
    sections.append(text.method_section(len(baseline), len(optimized), ctx))
    head = found.get("cost") or found["energy"]
    verdict = "significant" if head.significant else "not significant"
    return Report(
        kind="savings",
        title=f"Savings: {text.LABELS[head.metric]} {sig(head.rel * 100, 2)} % ({verdict})",
        sections=sections,
        data=data,
        runs=[*data["baseline_runs"], *data["optimized_runs"]],
        generated_at=datetime.now(timezone.utc).isoformat(),
    )


def _saving_data(s: Saving, work_per_run: float, yearly: float | None) -> dict[str, Any]:
    unit = {"energy": "j", "carbon": "g", "cost": "usd"}[s.metric]
    out: dict[str, Any] = {
        f"baseline_{unit}": s.baseline.value,
        f"baseline_uncertainty_{unit}": s.baseline.uncertainty,
        f"optimized_{unit}": s.optimized.value,
        f"optimized_uncertainty_{unit}": s.optimized.uncertainty,
        f"saving_{unit}": s.value, f"saving_uncertainty_{unit}": s.uncertainty,
        "saving_rel": s.rel, "saving_uncertainty_rel": s.change.uncertainty_rel,
        "significant": s.significant,
        f"saving_per_run_{unit}": s.value * work_per_run,
        f"saving_per_year_{unit}": None if yearly is None else s.value * yearly,
        f"saving_per_year_uncertainty_{unit}": None if yearly is None else s.uncertainty * yearly,
    }  # fmt: skip
    return out

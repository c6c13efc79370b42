"""The sections of the savings report: summary (money first), figures per unit, equivalences.

Text only: every number comes from :mod:`greenml.report.savings`.
"""

from __future__ import annotations

from greenml.accounting.equivalences import Equivalence, equivalences
from greenml.quantities import energy, mass, money, sig
from greenml.report.compare import METRICS, Metric
from greenml.report.model import Figure, Section, Series, Table
from greenml.report.savings_model import Context, Payback, Saving
from greenml.report.work import display_per, per_label

LABELS: dict[Metric, str] = {"energy": "energy", "carbon": "CO2eq", "cost": "cost"}
_PHYSICAL: tuple[Metric, ...] = ("energy", "carbon")
_SENTENCE: dict[Metric, str] = {"energy": "Energy", "carbon": "CO2eq", "cost": "Cost"}
_BAR_UNITS: dict[Metric, tuple[str, float]] = {
    "energy": ("energy (kWh)", 3.6e6), "carbon": ("CO2eq (kg)", 1000.0), "cost": ("cost ($)", 1.0),
}  # fmt: skip


def significance(saving: Saving) -> str:
    """``significant: the saving of 31 ± 6 % exceeds its uncertainty`` or ``not significant …``."""
    rel, unc = saving.rel * 100, saving.change.uncertainty_rel * 100
    digits = 0 if unc >= 2 else 1
    pm = f"{abs(rel):.{digits}f} ± {unc:.{digits}f} %"
    if not saving.significant:
        what = "saving" if rel >= 0 else "increase"
        return f"not significant: the {what} of {pm} is within its uncertainty"
    if rel >= 0:
        return f"significant: the saving of {pm} exceeds its uncertainty"
    return f"significant: an increase of {pm} (the optimized runs use more) exceeds its uncertainty"


def show(metric: Metric, value: float, uncertainty: float | None = None) -> str:
    """A metric's amount in base units as text (``3.2 kWh``, ``1.4 kg``, ``$12``)."""
    if metric == "energy":
        return energy(value, uncertainty)
    if metric == "carbon":
        return mass(value, uncertainty)
    return money(value, uncertainty)


def summary(
    found: dict[Metric, Saving],
    unknown: dict[Metric, str],
    ctx: Context,
    yearly: float | None,
    back: Payback | None,
) -> Section:
    """Money first: the yearly (or per-run) $ saving and whether it is real, then the payback."""
    lines = []
    cost = found.get("cost")
    per_run = ctx.work_per_run
    if cost is None:
        why = unknown.get("cost", "")
        lines.append(f"The cost is unknown ({why}); the figures below are energy and CO2eq.")
    elif yearly is not None:
        lines.append(
            f"Yearly saving: {money(cost.value * yearly, cost.uncertainty * yearly)} at "
            f"{sig(ctx.runs_per_year or 0)} runs a year ({money(cost.value * per_run)} per "
            f"run) — {significance(cost)}."
        )
    else:
        lines.append(
            f"Saving per run: {money(cost.value * per_run, cost.uncertainty * per_run)} — "
            f"{significance(cost)}. Give runs_per_year for yearly figures and the payback."
        )
    if back is not None:
        lines.append(_payback_text(back, cost))
    elif cost is not None and yearly is not None:
        lines.append("Give effort_hours and hourly_rate_usd for the payback time of the change.")
    amount = yearly if yearly is not None else per_run
    when = "a year" if yearly is not None else "per run"
    for metric in _PHYSICAL:
        s = found.get(metric)
        if s is None:
            lines.append(f"{LABELS[metric]}: unknown ({unknown.get(metric, '')}).")
            continue
        saved = show(metric, s.value * amount, s.uncertainty * amount)
        lines.append(f"{_SENTENCE[metric]} saved {when}: {saved} — {significance(s)}.")
    return Section(heading="Summary", paragraphs=lines)


def _payback_text(back: Payback, cost: Saving | None) -> str:
    effort = money(back.effort_usd)
    if back.months is None:
        return f"Payback: never — the change saves no money, so its {effort} of work is not repaid."
    unc = back.uncertainty_months or 0.0
    if back.months >= 24:
        months = f"{sig(back.months / 12, 2)} ± {sig(unc / 12, 2)} years"
    else:
        months = f"{sig(back.months, 2)} ± {sig(unc, 2)} months"
    text = f"Payback of the {effort} of engineering: {months}."
    if cost is not None and not cost.significant:
        text += " The saving is not significant, so the payback is not established either."
    return text


def per_unit_section(
    found: dict[Metric, Saving], unknown: dict[Metric, str], ctx: Context
) -> Section:
    per = display_per(ctx.unit)
    rows = []
    for metric in METRICS:
        s = found.get(metric)
        if s is None:
            rows.append([LABELS[metric], "unknown", "unknown", "", "", unknown[metric]])
            continue
        rows.append(
            [
                LABELS[metric],
                show(metric, s.baseline.value * per, s.baseline.uncertainty * per),
                show(metric, s.optimized.value * per, s.optimized.uncertainty * per),
                show(metric, s.value * per, s.uncertainty * per),
                f"{sig(s.rel * 100, 2)} ± {sig(s.change.uncertainty_rel * 100, 2)} %",
                "significant" if s.significant else "not significant",
            ]
        )
    columns = ["", "baseline", "optimized", "saving", "saving %", ""]
    table = Table(columns=columns, rows=rows)
    return Section(
        heading=per_label(ctx.unit).capitalize(), tables=[table], figures=[_bars(found, ctx.unit)]
    )


def _bars(found: dict[Metric, Saving], unit: str | None) -> Figure:
    """Baseline and optimized bars per metric (kWh, kg, $), with their uncertainties."""
    per = display_per(unit)
    shown = [m for m in METRICS if m in found]
    labels = [_BAR_UNITS[m][0] for m in shown]
    series, error = [], {}
    for name in ("baseline", "optimized"):
        estimates = [getattr(found[m], name) for m in shown]
        scales = [per / _BAR_UNITS[m][1] for m in shown]
        series.append(
            Series(name, labels, [e.value * k for e, k in zip(estimates, scales, strict=True)])
        )
        error[name] = [e.uncertainty * k for e, k in zip(estimates, scales, strict=True)]
    return Figure(
        kind="bars",
        title=f"Baseline and optimized, {per_label(unit)}",
        series=series,
        x_label="metric",
        y_label=f"{per_label(unit)} (unit under each bar)",
        error=error,
    )


def yearly_equivalences(found: dict[Metric, Saving], yearly: float) -> list[Equivalence]:
    """Everyday equivalents of the yearly CO2eq and energy saved (none for an increase)."""
    co2 = found.get("carbon")
    kwh = found.get("energy")
    co2_g = co2.value * yearly if co2 is not None and co2.value > 0 else None
    energy_j = kwh.value * yearly if kwh is not None and kwh.value > 0 else None
    return equivalences(co2_g, energy_j)


def equivalence_section(eq: list[Equivalence]) -> Section:
    table = Table(
        columns=["the yearly saving equals", "amount", "factor"],
        rows=[[e.label, sig(e.value), e.factor.description] for e in eq],
        note="Sources: " + " | ".join(sorted({e.factor.citation for e in eq})),
    )
    return Section(heading="In everyday terms", tables=[table])


def method_section(n_base: int, n_opt: int, ctx: Context) -> Section:
    work = (
        f"Figures are per unit of work ({ctx.unit}, from the runs' tags); one run is "
        f"{sig(ctx.work_per_run)} {ctx.unit}."
        if ctx.unit
        else "No run states its work, so figures are per run."
    )
    return Section(
        heading="Method",
        paragraphs=[
            f"Baseline: {n_base} run(s); optimized: {n_opt} run(s). {work}",
            "Each group's value is the mean of its runs; its uncertainty is the larger of the "
            "runs' stated measurement uncertainty and the standard error between runs. The "
            "saving's uncertainty combines both groups in quadrature; a saving is significant "
            "only when it exceeds that uncertainty.",
        ],
    )

"""Software Carbon Intensity (ISO/IEC 21031:2024, Green Software Foundation SCI 1.0).

    SCI = (O + M) per R,   O = E × I,   M = TE × (TiR / EL) × (RR / ToR)

- E: facility energy of the runs in kWh (PUE applied, as the specification
  asks for data-centre efficiency to be included);
- I: location-based grid intensity (average or marginal, as recorded for each
  run; never market-based). O is each run's time-weighted carbon, so
  I = O ÷ E is the effective intensity;
- M: embodied emissions, a time share (TiR of EL) and resource share (RR of
  ToR) of each device's total embodied emissions TE, from the cited table
  (:mod:`greenml.hardware.embodied`) or ``--embodied-kg``;
- R: the functional unit the user chose (``--per``, ``--units``); the provider's units
  of SCI for AI (per FLOP, training token, parameter; gross and effective) beside it
  (:mod:`greenml.report.sci_ai`, ``-O parameters=``, ``-O training_tokens=``). ``--per workflow``
  counts the runs' workflow executions and adds their model calls (measured and
  estimated apart) to O (:mod:`greenml.report.sci_workflow`).

Nothing unknown is filled in: without a cited TE, M is reported as unknown and
the score as operational only; runs without carbon make O a lower bound.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

from greenml.errors import ConfigError
from greenml.hardware.embodied import (
    DEFAULT_LIFETIME_YEARS,
    LIFETIME_SOURCE,
    Embodied,
    amortize,
)
from greenml.quantities import J_PER_KWH
from greenml.report import prose
from greenml.report import sigfig as fmt
from greenml.report.model import Report, Section, Table
from greenml.report.runset import RunSet

WHOLE_UNITS = frozenset({"training run", "training", "job", "experiment", "model", "search"})
"""Functional units that the whole run set is one of, when ``--units`` is not given."""
_LEADING_NUMBER = re.compile(r"^\s*([0-9][0-9_,]*(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)\s+(\S.*?)\s*$")


@dataclass(frozen=True)
class FunctionalUnit:
    """R: ``count`` functional units of ``scale`` × ``unit`` each."""

    label: str
    unit: str
    scale: float
    units: float
    source: str

    @property
    def count(self) -> float:
        return self.units / self.scale


def functional_unit(per: str, units: float | None, runs: int) -> FunctionalUnit:
    """Parse ``--per`` (``token``, ``1000 inferences``) and ``--units`` (how many tokens …).

    Raises:
        ConfigError: Empty ``per``, ``units`` not a positive finite number, or a
            ``per`` that needs ``units`` without them.
    """
    label = " ".join(per.split())
    if not label:
        raise ConfigError("--per must name a functional unit, e.g. 'token' or '1000 inferences'")
    scale, unit = 1.0, label
    found = _LEADING_NUMBER.match(label)
    if found:
        scale, unit = float(found.group(1).replace(",", "").replace("_", "")), found.group(2)
        if not math.isfinite(scale) or scale <= 0:
            raise ConfigError(f"--per {per!r}: the number must be positive")
    if units is not None:
        if not math.isfinite(units) or units <= 0:
            raise ConfigError(f"--units must be a positive number, got {units}")
        return FunctionalUnit(label, unit, scale, units, f"given: {fmt.count(units)} {unit}")
    if scale == 1 and unit.lower() in ("run", "runs"):
        return FunctionalUnit(label, unit, 1.0, float(runs), "the number of runs")
    if scale == 1 and unit.lower() in WHOLE_UNITS:
        return FunctionalUnit(label, unit, 1.0, 1.0, f"the runs together are one {unit}")
    raise ConfigError(f"--per {label!r} needs --units: how many {unit} the runs processed")


def embodied_terms(
    runs: RunSet, embodied_kg: float | None, lifetime_years: float
) -> tuple[list[Embodied], list[str]]:
    """The terms of M, and what could not be included (one sentence each); cited figures only."""
    devices = [(use.name, use.hours) for use in runs.devices.values()]
    return amortize(devices, embodied_kg=embodied_kg, lifetime_years=lifetime_years,
                    machine_hours=runs.run_seconds / 3600)  # fmt: skip


def build(
    runs: RunSet,
    *,
    per: str = "run",
    units: float | None = None,
    embodied_kg: float | None = None,
    lifetime_years: float | None = None,
    parameters: float | None = None,
    training_tokens: float | None = None,
) -> Report:
    """The SCI score of a run set per functional unit, with every term and its source.

    Raises:
        ConfigError: A bad functional unit, a negative ``embodied_kg``, or a
            lifetime outside (0, 30] years.
    """
    from greenml.report import sci_workflow

    workflow = (
        sci_workflow.workflow_sum(runs.records) if sci_workflow.is_workflow_unit(per) else None
    )
    if workflow is not None and units is None:
        if not workflow.executions:
            raise ConfigError(
                "--per workflow: no run here carries a workflow block (model calls made inside "
                "a greenml.Run with an instrumented client); or give --units"
            )
        r = FunctionalUnit(
            " ".join(per.split()),
            "workflow execution",
            1.0,
            float(workflow.executions),
            "workflow executions recorded in the runs",
        )
    else:
        r = functional_unit(per, units, len(runs.records))
    if embodied_kg is not None and (not math.isfinite(embodied_kg) or embodied_kg < 0):
        raise ConfigError(f"--embodied-kg must be a number ≥ 0, got {embodied_kg}")
    life = DEFAULT_LIFETIME_YEARS if lifetime_years is None else lifetime_years
    if not math.isfinite(life) or not 0 < life <= 30:
        raise ConfigError(f"--lifetime-years must be in (0, 30], got {life}")
    life_source = (
        "given by the user (--lifetime-years)" if lifetime_years is not None else LIFETIME_SOURCE
    )
    terms, missing = embodied_terms(runs, embodied_kg, life)
    e_kwh = runs.facility_energy.value / J_PER_KWH
    o_g = runs.carbon.value * 1000 if runs.carbon.known else None
    local_g = o_g
    if workflow is not None and workflow.executions:
        e_kwh += workflow.energy_j / J_PER_KWH
        o_g = (o_g or 0.0) + workflow.co2eq_g
    m_g = sum(t.m_kg for t in terms) * 1000 if terms else None
    total_g = (o_g or 0.0) + (m_g or 0.0) if (o_g is not None or m_g is not None) else None
    sci = total_g / r.count if total_g is not None else None
    complete = o_g is not None and runs.carbon.complete and m_g is not None and not missing
    data = {
        "sci_g_per_unit": sci,
        "functional_unit": r.label,
        "r": r.count,
        "units": r.units,
        "units_source": r.source,
        "e_kwh": e_kwh,
        "i_g_per_kwh": runs.intensity_g_per_kwh(),
        "i_kinds": sorted({str(e.get("kind")) for e in runs.intensities}),
        "o_g": o_g,
        "m_g": m_g,
        "embodied_terms": [{**asdict(t), "m_g": t.m_kg * 1000} for t in terms],
        "embodied_missing": missing,
        "lifetime_years": life,
        "lifetime_source": life_source,
        "carbon_known_runs": len(runs.carbon.known),
        "complete": complete,
        "tool": prose.tool(),
        "aggregate": runs.to_dict(),
    }
    if workflow is not None:
        data["workflow"] = {**workflow.to_dict(), "local_o_g": local_g}
    terms_table = _terms_table(runs, r, o_g, m_g, life, life_source)
    if workflow is not None and workflow.executions:
        sci_workflow.amend_terms(terms_table, workflow, e_kwh)
    sections = [
        Section("Score", paragraphs=[_score_text(runs, r, sci, o_g, m_g, missing)]),
        Section("Terms", tables=[terms_table]),
        Section(
            "Embodied emissions (M)",
            paragraphs=_embodied_text(terms, missing),
            tables=[_embodied_table(terms)] if terms else [],
        ),
        Section("Runs", tables=[prose.runs_table(runs)]),
    ]
    from greenml.report.sci_ai import provider_units

    provider, data["sci_ai"] = provider_units(runs.records, total_g, parameters, training_tokens)
    sections.insert(3, provider)
    if workflow is not None and workflow.executions:
        parts = sci_workflow.parts_table(workflow, local_g, runs.facility_energy.value, r.count)
        sections.insert(1, Section("Workflow", tables=[parts]))
    return Report(
        kind="sci",
        title=f"Software Carbon Intensity per {r.label}",
        sections=sections,
        data=data,
        runs=runs.ids,
        generated_at=datetime.now(tz=timezone.utc).isoformat(),
    )


def _g(grams: float | None) -> str:
    return "unknown" if grams is None else f"{fmt.sig(grams, 3)} g CO2eq"


def _score_text(
    runs: RunSet,
    r: FunctionalUnit,
    sci: float | None,
    o_g: float | None,
    m_g: float | None,
    missing: list[str],
) -> str:
    if sci is None:
        return (
            f"SCI per {r.label}: unknown — neither the operational carbon (no intensity "
            f"recorded) nor the embodied emissions are known."
        )
    if o_g is not None and m_g is not None:
        formula = f"SCI = (O + M) / R = ({_g(o_g)} + {_g(m_g)}) / {fmt.count(r.count)}"
    elif o_g is not None:
        formula = f"SCI, operational part (M unknown) = O / R = {_g(o_g)} / {fmt.count(r.count)}"
    else:
        formula = f"SCI, embodied part (O unknown) = M / R = {_g(m_g)} / {fmt.count(r.count)}"
    text = f"{formula} = {fmt.sig(sci, 3)} g CO2eq per {r.label} (ISO/IEC 21031:2024)."
    if o_g is None:
        text += (
            " Operational carbon is unknown (no intensity recorded): the score is embodied only."
        )
    elif runs.carbon.missing:
        text += f" O is a lower bound: carbon is {runs.carbon.coverage()}. " + prose.missing_carbon(
            runs
        )
    if missing:
        text += " Not included in M: " + "; ".join(missing) + "."
    return text


def _terms_table(
    runs: RunSet,
    r: FunctionalUnit,
    o_g: float | None,
    m_g: float | None,
    life: float,
    life_source: str,
) -> Table:
    kinds = ", ".join(sorted({str(e.get("kind")) for e in runs.intensities})) or "unknown"
    fac = runs.facility_energy
    rows = [
        [
            "E",
            fmt.kwh(fac.value, 3),
            f"facility energy of {fmt.plural(len(fac.known), 'run')}, PUE "
            f"{prose.pue(runs)}; {fmt.percent(fac.uncertainty_rel)}; {prose.methods(runs)}",
        ],
        ["I", prose.intensity(runs), f"location-based, {kinds} intensity; time-weighted per run"],
        ["O = E × I", _g(o_g), runs.carbon.coverage() or "sum of the runs' time-weighted carbon"],
        [
            "M",
            _g(m_g),
            f"TE × (TiR / EL) × (RR / ToR); EL = {life:g} years, {life_source}",
        ],
        ["R", f"{fmt.count(r.count)} × {r.label}", r.source],
    ]
    return Table(["term", "value", "source"], rows)


def _embodied_text(terms: list[Embodied], missing: list[str]) -> list[str]:
    text = [
        "Each device's total embodied emissions TE are charged for the hours it was "
        "reserved (TiR, device-hours) out of its expected lifespan EL; a host server is "
        "shared by its GPUs (RR of ToR)."
    ]
    if not terms:
        text.append("M is unknown: " + "; ".join(missing) + ".")
    return text


def _embodied_table(terms: list[Embodied]) -> Table:
    rows = [
        [
            t.item,
            fmt.sig(t.te_kg, 3),
            fmt.sig(t.tir_h, 3),
            fmt.sig(t.el_h, 3),
            f"{t.rr:g}/{t.tor:g}",
            fmt.sig(t.m_kg * 1000, 3),
            t.source,
        ]
        for t in terms
    ]
    columns = ["item", "TE (kg CO2eq)", "TiR (h)", "EL (h)", "RR/ToR", "M (g CO2eq)", "TE source"]
    return Table(columns, rows)

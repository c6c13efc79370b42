"""EU AI Act technical documentation, Annex XI Section 1 point 2 (d) and (e).

Regulation (EU) 2024/1689, Annex XI (technical documentation of general-purpose
AI models, Article 53(1)(a)), Section 1, point 2:

- (d) "the computational resources used to train the model (e.g. number of
  floating point operations), training time, and other relevant details
  related to the training";
- (e) "known or estimated energy consumption of the model", which "where the
  energy consumption of the model is unknown, … may be based on information
  about computational resources used".

Energy is given in MWh to at least two significant figures (as the GPAI Code of
Practice's Model Documentation Form records its figures), facility energy
(PUE applied) first. Every run given is aggregated: restarts, failed runs and
hyperparameter searches are training compute too, and each is listed.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

from greenml.errors import ConfigError
from greenml.quantities import J_PER_MWH
from greenml.report import prose
from greenml.report import records as rec
from greenml.report import sigfig as fmt
from greenml.report.model import Report, Section, Table
from greenml.report.runset import RunSet

DELEGATED_ACT_NOTE = (
    "The Commission has not yet adopted the delegated act under Article 53(5) that will "
    "detail measurement and calculation methodologies for points 2(d) and 2(e) of Annex XI; "
    "this document therefore states the method that was used, so that the figures can be "
    "checked and compared."
)


def mwh_text(joules: float, uncertainty_rel: float | None = None) -> str:
    """MWh with at least two significant figures (three when known to better than ±5 %)."""
    return fmt.mwh(joules, fmt.digits_for(uncertainty_rel))


def build(
    runs: RunSet,
    *,
    model: str | None = None,
    provider: str | None = None,
    flops: float | None = None,
    estimated_mwh: float | None = None,
) -> Report:
    """Annex XI 2(d)–(e) documentation for the runs that trained a model.

    Args:
        runs: Every run of the training: restarts and searches included.
        model: The model's name.
        provider: The provider placing it on the market.
        flops: Training FLOPs for all runs; else the sum of the runs' ``flops`` tags.
        estimated_mwh: Energy of parts not measured (e.g. from ``greenml estimate``),
            added to the total and labelled estimated.

    Raises:
        ConfigError: A negative or non-finite ``flops`` or ``estimated_mwh``, or a
            run whose ``flops`` tag is not a number.
    """
    for name, value in (("--flops", flops), ("--estimated-mwh", estimated_mwh)):
        if value is not None and (not math.isfinite(value) or value < 0):
            raise ConfigError(f"{name} must be a number ≥ 0, got {value}")
    compute = _flops(runs, flops)
    energy = _energy(runs, estimated_mwh)
    name = model or "the model"
    scope = (
        f"This section documents points 2(d) and 2(e) of Annex XI, Section 1, of Regulation "
        f"(EU) 2024/1689 for {name}"
        + (f", provided by {provider}" if provider else "")
        + f". It covers {len(runs.records)} run{'s' if len(runs.records) != 1 else ''} "
        f"from {prose.utc(runs.first_start_s)} to {prose.utc(runs.last_end_s)}, measured "
        f"with {prose.tool()}."
    )
    sections = [
        Section("Scope", paragraphs=[scope]),
        Section(
            "2(d) Computational resources used to train the model",
            paragraphs=[_compute_text(runs, compute)],
            tables=[_compute_table(runs, compute)],
        ),
        Section(
            "2(e) Energy consumption",
            paragraphs=[energy["text"]],
            tables=[_energy_table(runs, energy)],
        ),
        Section("Methodology", paragraphs=_method_text(runs), tables=[_components_table(runs)]),
        Section("Runs included", paragraphs=[_runs_text(runs)], tables=[prose.runs_table(runs)]),
    ]
    data = {
        "model": model,
        "provider": provider,
        "annex": "Regulation (EU) 2024/1689, Annex XI, Section 1, point 2(d)-(e)",
        **compute,
        "devices": [
            {"type": d.name, "max_per_run": d.max_count, "device_hours": d.hours}
            for d in runs.devices.values()
        ],
        "training_time_hours": (runs.span_s or 0.0) / 3600,
        "run_hours": runs.run_seconds / 3600,
        "first_start": prose.utc(runs.first_start_s),
        "last_end": prose.utc(runs.last_end_s),
        **{k: v for k, v in energy.items() if k != "text"},
        "statuses": prose.statuses(runs),
        "delegated_act_note": DELEGATED_ACT_NOTE,
        "tool": prose.tool(),
        "aggregate": runs.to_dict(),
    }
    return Report(
        kind="euaiact",
        title=f"EU AI Act technical documentation (Annex XI 2(d)-(e)): {name}",
        sections=sections,
        data=data,
        runs=runs.ids,
        generated_at=datetime.now(tz=timezone.utc).isoformat(),
    )


def _flops(runs: RunSet, given: float | None) -> dict[str, Any]:
    if given is not None:
        return {
            "flops": given,
            "flops_source": "given by the provider (--flops)",
            "flops_known_runs": len(runs.records),
        }
    total, counted, tagged = 0.0, 0, 0
    for record in runs.records:
        block = record.get("flops") or {}
        if block.get("method") == "counted" and isinstance(block.get("flops"), (int, float)):
            total, counted = total + float(block["flops"]), counted + 1
            continue
        text = (record.get("tags") or {}).get("flops")
        if text is None:
            continue
        try:
            value = float(str(text).replace("_", ""))
        except ValueError:
            raise ConfigError(f"run {record['id']}: tag flops={text!r} is not a number") from None
        total, tagged = total + value, tagged + 1
    known = counted + tagged
    if not known:
        return {
            "flops": None,
            "flops_source": "unknown: no --flops, no counted FLOPs and no flops=… tag on the runs",
            "flops_known_runs": 0,
        }
    coverage = (
        "" if known == len(runs.records) else f"; known for {known} of {len(runs.records)} runs"
    )
    parts = []
    if counted:
        parts.append(f"counted in {counted} run{'s' if counted > 1 else ''} "
                     "(PyTorch FlopCounterMode on sampled steps)")  # fmt: skip
    if tagged:
        parts.append(f"given by flops tags on {tagged} run{'s' if tagged > 1 else ''}")
    source = "sum of the runs' flops tags" if not counted else "sum of FLOPs " + " and ".join(parts)
    return {
        "flops": total,
        "flops_source": f"{source}{coverage}",
        "flops_known_runs": known,
        "flops_counted_runs": counted,
        "flops_given_runs": tagged,
    }


def _compute_text(runs: RunSet, compute: dict[str, Any]) -> str:
    flops = compute["flops"]
    flops_text = (
        f"{fmt.scientific(flops, 2)} floating-point operations ({compute['flops_source']})"
        if flops is not None
        else f"FLOPs {compute['flops_source']}"
    )
    return (
        f"Training used {flops_text}. Hardware: {prose.hardware(runs)}; "
        f"{prose.device_hours(runs)}. Training time: {fmt.duration(runs.span_s or 0.0, 3)} "
        f"of wall-clock time from the first start to the last end "
        f"({fmt.duration(runs.run_seconds, 3)} summed over the runs)."
    )


def _compute_table(runs: RunSet, compute: dict[str, Any]) -> Table:
    flops = compute["flops"]
    rows = [
        [
            "Floating-point operations",
            fmt.scientific(flops, 2) if flops is not None else "unknown",
            compute["flops_source"],
        ]
    ]
    for d in runs.devices.values():
        rows.append(
            [
                f"Devices: {d.name}",
                f"up to {d.max_count} per run",
                f"{fmt.sig(d.hours, 3)} device-hours over {fmt.plural(len(d.runs), 'run')}",
            ]
        )
    if not runs.devices:
        rows.append(["Devices", prose.hardware(runs), "no accelerator measured"])
    rows += [
        [
            "Training time (wall clock)",
            fmt.duration(runs.span_s or 0.0, 3),
            f"{prose.utc(runs.first_start_s)} to {prose.utc(runs.last_end_s)}",
        ],
        ["Run time (sum over runs)", fmt.duration(runs.run_seconds, 3), prose.statuses_text(runs)],
    ]
    return Table(["item", "value", "detail"], rows)


def _energy(runs: RunSet, estimated_mwh: float | None) -> dict[str, Any]:
    it, fac = runs.it_energy, runs.facility_energy
    kind = prose.measured_or_estimated(runs)
    estimated_j = (estimated_mwh or 0.0) * J_PER_MWH
    total_j = fac.value + estimated_j
    text = (
        f"Energy consumption of training: {mwh_text(total_j, fac.uncertainty_rel)} "
        f"({fmt.percent(fac.uncertainty_rel)}), {kind}. This is facility energy (IT energy × PUE); "
        f"the IT equipment alone used {mwh_text(it.value, it.uncertainty_rel)}."
    )
    if runs.energy_unknown:
        ids = ", ".join(m.run_id for m in runs.energy_unknown)
        text += f" Energy is unknown for {len(runs.energy_unknown)} run(s) ({ids})"
        text += (
            f"; {mwh_text(estimated_j)} estimated by the provider is added for them."
            if estimated_mwh is not None
            else "; they are not included, and not counted as zero."
        )
    elif estimated_mwh is not None:
        text += f" It includes {mwh_text(estimated_j)} estimated by the provider (--estimated-mwh)."
    return {
        "text": text,
        "energy_mwh": total_j / J_PER_MWH,
        "energy_uncertainty_mwh": fac.uncertainty / J_PER_MWH,
        "measured_energy_mwh": fac.value / J_PER_MWH,
        "it_energy_mwh": it.value / J_PER_MWH,
        "estimated_mwh": estimated_mwh,
        "energy_basis": kind,
        "energy_known_runs": len(it.known),
        "energy_unknown": [m.to_dict() for m in runs.energy_unknown],
        "pue": prose.pue(runs),
    }


def _energy_table(runs: RunSet, energy: dict[str, Any]) -> Table:
    fac, it = runs.facility_energy, runs.it_energy
    rows = [
        [
            "Energy, facility (measured runs)",
            mwh_text(fac.value, fac.uncertainty_rel),
            f"{fmt.percent(fac.uncertainty_rel)}; PUE {energy['pue']}",
        ],
        [
            "Energy, IT equipment",
            mwh_text(it.value, it.uncertainty_rel),
            f"{fmt.percent(it.uncertainty_rel)}; {prose.methods(runs)}",
        ],
    ]
    if energy["estimated_mwh"] is not None:
        rows.append(
            [
                "Energy, estimated parts",
                mwh_text(energy["estimated_mwh"] * J_PER_MWH),
                "estimated (given with --estimated-mwh)",
            ]
        )
    rows.append(
        [
            "Total",
            mwh_text(energy["energy_mwh"] * J_PER_MWH, fac.uncertainty_rel),
            energy["energy_basis"] + (f"; {it.coverage()}" if it.missing else ""),
        ]
    )
    return Table(["quantity", "MWh", "basis"], rows)


def _components_table(runs: RunSet) -> Table:
    methods: dict[str, set[str]] = {}
    for record in runs.records:
        for comp, _key, _name, _j, _rel, method in rec.devices(record):
            methods.setdefault(comp, set()).add(method)
    rows = []
    total = sum(j for j, _u in runs.components.values())
    for comp, (joules, unc) in runs.components.items():
        rows.append(
            [
                comp,
                ", ".join(sorted(methods.get(comp, ()))),
                mwh_text(joules),
                f"{fmt.sig(100 * joules / total, 2)} %" if total else "",
                fmt.percent(unc / joules if joules else None),
            ]
        )
    return Table(
        ["component", "measurement method", "IT energy", "share", "uncertainty"],
        rows,
        note=", ".join(f"{m}: {w}" for m, w in prose.METHOD_WORDS.items()),
    )


def _method_text(runs: RunSet) -> list[str]:
    return [
        f"Each device's energy was {prose.methods(runs)}. Facility energy is IT energy × PUE "
        f"({prose.pue(runs)}).",
        "Every run given is aggregated: restarted and failed runs and hyperparameter-search "
        "trials are counted in full, since their energy was spent on training the model. "
        + prose.UNCERTAINTY_NOTE,
        DELEGATED_ACT_NOTE,
    ]


def _runs_text(runs: RunSet) -> str:
    searches = sorted({f"{k}={v}" for r in runs.records for k, v in (r.get("tags") or {}).items()})
    text = f"{len(runs.records)} runs: {prose.statuses_text(runs)}."
    if searches:
        text += " Tags (searches, restarts): " + ", ".join(searches) + "."
    return text

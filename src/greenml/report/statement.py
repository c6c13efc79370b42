"""Carbon Impact Statement: the energy and carbon of a piece of work, ready for a paper.

In the spirit of Henderson et al. (2020), "Towards the Systematic Reporting of
the Energy and Carbon Footprints of Machine Learning" (JMLR 21(248)): energy
at the devices and at the facility, CO2eq with its uncertainty, PUE, carbon
intensity and its source, hardware, wall-clock and device hours, how each
figure was obtained, and everyday equivalences with their citations.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from greenml.accounting.equivalences import equivalences
from greenml.report import figures, prose, run_figures
from greenml.report import sigfig as fmt
from greenml.report.model import Report, Section, Table
from greenml.report.runset import RunSet

TITLE = "Carbon Impact Statement"


def build(runs: RunSet) -> Report:
    """The statement for a run set (it takes no options)."""
    paragraph = statement_paragraph(runs)
    sections = [
        Section("Statement", paragraphs=[paragraph]),
        Section("Figures", tables=[key_figures(runs)]),
        Section("Everyday equivalences", tables=[equivalence_table(runs)]),
        Section("Runs", tables=[prose.runs_table(runs)]),
        Section("Method", paragraphs=method_paragraphs(runs)),
        Section("Energy breakdown", figures=breakdown_figures(runs)),
    ]
    data = runs.to_dict()
    data.update(
        tool=prose.tool(),
        paragraph=paragraph,
        measured_or_estimated=prose.measured_or_estimated(runs),
        uncertainty_combination="linear across runs (correlated errors)",
        equivalences={e.key: e.to_json() for e in _equivalences(runs)},
    )
    return Report(
        kind="statement",
        title=TITLE,
        sections=sections,
        data=data,
        runs=runs.ids,
        generated_at=datetime.now(tz=timezone.utc).isoformat(),
    )


def statement_markdown(record: dict[str, Any]) -> str:
    """The statement of one run record, as Markdown (what trackers attach to a run)."""
    from greenml.report.markdown import render_markdown

    return render_markdown(build(RunSet([record])))


def statement_paragraph(runs: RunSet) -> str:
    """The paragraph to paste into a paper: every number, how it was obtained, the tool."""
    it, fac, carbon = runs.it_energy, runs.facility_energy, runs.carbon
    n = len(runs.records)
    d_it = fmt.digits_for(it.uncertainty_rel)
    work = f"{n} run{'s' if n > 1 else ''}, {fmt.duration(runs.run_seconds)} of wall-clock time"
    if runs.devices:
        work += f", {prose.device_hours(runs)}"
    it_text = f"{fmt.energy(it.value, d_it)} ({fmt.percent(it.uncertainty_rel)})"
    text = (
        f"The computation reported here ({work}; hardware: {prose.hardware(runs)}) used "
        f"{it_text} of electricity at the devices and {fmt.energy(fac.value, d_it)} including "
        f"data-centre overhead (PUE {prose.pue(runs)})."
    )
    if runs.energy_unknown:
        text += (
            f" Energy is {it.coverage()}: "
            + "; ".join(f"{m.run_id} ({m.reason})" for m in runs.energy_unknown)
            + "."
        )
    if carbon.known:
        d_c = fmt.digits_for(carbon.uncertainty_rel)
        least = "at least " if carbon.missing else ""
        co2 = f"{fmt.co2(carbon.value, d_c)} ({fmt.percent(carbon.uncertainty_rel)})"
        text += (
            f" It emitted {least}{co2} at an average carbon intensity of {prose.intensity(runs)}."
        )
        if carbon.missing:
            text += f" Carbon is {carbon.coverage()}; it is not counted as zero. "
            text += prose.missing_carbon(runs)
    else:
        text += (
            " Its carbon emissions are unknown: no carbon intensity was recorded for any run "
            "(greenml run --zone, --region, --country or --ci sets one)."
        )
    text += footprint_sentence(runs)
    text += f" Energy was measured with {prose.tool()}: {prose.methods(runs)}."
    found = {e.key: e for e in _equivalences(runs)}
    shown = [found[k] for k in ("smartphone_charges", "passenger_car_years") if k in found]
    if any(e.factor.basis == "co2" for e in shown):
        sizes = " or ".join(f"{fmt.sig(e.value, 2)} {e.label}" for e in shown)
        text += f" This is about the emissions of {sizes} (US EPA factors)."
    return text


def footprint_sentence(runs: RunSet) -> str:
    """Market-based and embodied carbon and water, reported beside (never in) the CO2eq above."""
    said = []
    if runs.carbon_market.known:
        said.append(f"{fmt.co2(runs.carbon_market.value, 2)} market-based (GHG Protocol Scope 2; "
                    "reported beside, not instead of, the location-based figure)")  # fmt: skip
    if runs.embodied.known:
        said.append(f"{fmt.co2(runs.embodied.value, 2)} embodied in the hardware (amortized)")
    if runs.water.known:
        said.append(f"{fmt.sig(runs.water.value, 2)} L of water (cooling and generation)")
    if not said:
        return ""
    text = " It also accounts for " + "; ".join(said) + "."
    if runs.offsets_kg:
        text += f" Offsets of {fmt.co2(runs.offsets_kg, 2)} are held and not subtracted."
    return text


def key_figures(runs: RunSet) -> Table:
    """Every figure of the statement with its uncertainty and source."""
    it, fac, carbon = runs.it_energy, runs.facility_energy, runs.carbon
    rows = [
        [
            "Energy, IT (devices)",
            fmt.energy(it.value, 3),
            fmt.percent(it.uncertainty_rel),
            it.coverage() or "all runs",
        ],
        [
            "Energy, facility (× PUE)",
            fmt.energy(fac.value, 3),
            fmt.percent(fac.uncertainty_rel),
            f"PUE {prose.pue(runs)}",
        ],
        [
            "CO2eq",
            fmt.co2(carbon.value, 3) if carbon.known else "unknown",
            fmt.percent(carbon.uncertainty_rel) if carbon.known else "",
            carbon.coverage() or ("all runs" if carbon.known else "no intensity recorded"),
        ],
        ["Carbon intensity", prose.intensity(runs), "", "energy-weighted over runs with carbon"],
        *footprint_rows(runs),
        [
            "Cost (electricity or instance)",
            fmt.usd(runs.cost.value) if runs.cost.known else "unknown",
            "",
            runs.cost.coverage() or ("all runs" if runs.cost.known else "no price recorded"),
        ],
        [
            "Wall-clock time",
            fmt.duration(runs.run_seconds, 3),
            "",
            f"sum over runs; first start to last end {fmt.duration(runs.span_s or 0.0, 3)}",
        ],
        ["Device-hours", prose.device_hours(runs), "", "GPUs × run duration"],
        ["Hardware", prose.hardware(runs), "", "from the runs' environment and devices"],
        ["Method", prose.methods(runs), "", prose.measured_or_estimated(runs)],
        ["Tool", prose.tool(), "", ""],
    ]
    return Table(["quantity", "value", "uncertainty", "note"], rows, note=prose.UNCERTAINTY_NOTE)


def footprint_rows(runs: RunSet) -> list[list[str]]:
    """Market-based and embodied CO2eq and water, each apart from the location-based CO2eq."""
    rows = []
    for label, total, unit, note in (
        ("CO2eq, market-based (scope 2)", runs.carbon_market, "kg",
         "certificates, supplier factor or provider CFE; never mixed with the row above"),
        ("CO2eq, embodied (amortized)", runs.embodied, "kg",
         "device-hours × embodied kg ÷ lifetime hours"),
        ("Water (on-site + off-site)", runs.water, "L", "WUE × IT energy + grid water × facility"),
    ):  # fmt: skip
        if not total.known:
            rows.append([label, "unknown", "", total.coverage() or "not recorded"])
            continue
        value = fmt.co2(total.value, 3) if unit == "kg" else f"{fmt.sig(total.value, 3)} L"
        rows.append([label, value, fmt.percent(total.uncertainty_rel), total.coverage() or note])
    if runs.offsets_kg:
        rows.append(["Offsets held", fmt.co2(runs.offsets_kg, 3), "",
                     "listed apart, never subtracted"])  # fmt: skip
    if runs.flops.known:
        how = ", ".join(f"{m} in {n} run{'s' if n > 1 else ''}"
                        for m, n in sorted(runs.flops_methods.items()))  # fmt: skip
        note = runs.flops.coverage() or how
        rows.append(["Work done (FLOPs)", fmt.scientific(runs.flops.value, 3),
                     fmt.percent(runs.flops.uncertainty_rel), note])  # fmt: skip
        kwh = runs.it_energy.value / 3.6e6
        if kwh > 0 and not runs.flops.missing:
            rows.append(["FLOPs per kWh (IT)", fmt.scientific(runs.flops.value / kwh, 3), "",
                         "work per unit of energy at the devices"])  # fmt: skip
    return rows


def equivalence_table(runs: RunSet) -> Table:
    """Car-years, phone charges and household-years, each with its factor and source."""
    rows = []
    least = "at least " if runs.carbon.missing else ""
    for eq in _equivalences(runs):
        prefix = least if eq.factor.basis == "co2" else ""
        rows.append(
            [f"{prefix}{fmt.sig(eq.value, 2)}", eq.label, eq.factor.description, eq.factor.citation]
        )
    note = "Equivalences illustrate a size; the factors are US averages."
    if not runs.carbon.known:
        note += " CO2-based equivalences are left out: carbon is unknown."
    return Table(["amount", "equivalent", "factor", "source"], rows, note=note)


def method_paragraphs(runs: RunSet) -> list[str]:
    """How the figures were obtained, in a few sentences."""
    return [
        f"Energy per device was {prose.methods(runs)}; the whole is "
        f"{prose.measured_or_estimated(runs)}. Facility energy is IT energy × PUE "
        f"({prose.pue(runs)}). Carbon is time-weighted: each hour's facility energy × that "
        "hour's intensity where hourly data was used.",
        prose.UNCERTAINTY_NOTE,
        f"Every run given is included ({len(runs.records)}), failed and restarted runs too.",
    ]


def breakdown_figures(runs: RunSet) -> list[Any]:
    """Energy by component; power and grid intensity over time (per run for several runs,
    with the energy of each run)."""
    out: list[Any] = [figures.energy_by_component(runs)]
    if len(runs.records) == 1:
        timeline = figures.power_over_time(runs.samples(runs.ids[0]))
        intensity = figures.intensity_over_run(runs.records[0])
        out.extend(f for f in (timeline, intensity) if f is not None)
    else:
        out.append(figures.energy_per_run(runs))
        power, intensity = run_figures.power_per_run(runs), run_figures.intensity_per_run(runs)
        out.extend(f for f in (power, intensity) if f is not None)
    return out


def _equivalences(runs: RunSet) -> list[Any]:
    co2_g = runs.carbon.value * 1000 if runs.carbon.known else None
    return equivalences(co2_g, runs.facility_energy.value)

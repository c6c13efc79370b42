"""Energy label for inference, after Hugging Face's AI Energy Score: 1 to 5 stars.

The runs' GPU energy per 1,000 queries is placed in 5 equal-width bands between
the least and the most energy of a **versioned reference set of the same task
class** (:mod:`greenml.report.label_reference`): the band with the lowest
energy gives 5 stars, the highest 1 star. A value outside the reference range
is clamped to 5 or 1 stars, and the label says so.

Queries per run come from the ``queries`` option, else from each run's tags
(``--tag queries=N``, or ``work=N`` with ``work_unit=queries``).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from greenml.errors import ConfigError
from greenml.quantities import sig
from greenml.report.compare import estimate, records_of
from greenml.report.label_reference import (
    REFERENCE_FILE,
    STARS,
    Band,
    ReferenceModel,
    bands,
    load_reference,
    stars_for,
)
from greenml.report.model import Figure, Report, Section, Series, Table
from greenml.report.work import parse_amount, work_of

Scope = Literal["gpu", "total"]
_J_PER_WH = 3600.0


def _queries(record: dict[str, Any], queries: float | None) -> float:
    if queries is not None:
        return queries
    work = work_of(record, "queries")
    if work is None:
        raise ConfigError(
            f"run {record.get('id', '?')} states no number of queries: "
            "tag it (--tag queries=N) or give the queries option"
        )
    return work.amount


def _energy(record: dict[str, Any], scope: Scope) -> tuple[float, float]:
    energy = record.get("energy") or {}
    run = record.get("id", "?")
    if record.get("status") != "completed":
        raise ConfigError(f"run {run} is {record.get('status')}: only completed runs are labelled")
    block = energy if scope == "total" else (energy.get("components") or {}).get("gpu")
    if not block or block.get("uncertainty_rel") is None:
        what = "no GPU energy" if scope == "gpu" else "no energy total"
        fix = " (to label the energy of all components: --energy-scope total)"
        hint = fix if scope == "gpu" else ""
        raise ConfigError(f"run {run} has {what} with its uncertainty{hint}")
    key = "total_j" if scope == "total" else "energy_j"
    return float(block[key]), float(block["uncertainty_rel"])


def _stars_text(stars: int) -> str:
    return "★" * stars + "☆" * (STARS - stars)


def _marker(here: bool) -> str:
    return "◀ these runs" if here else ""


def _sources(rows: list[ReferenceModel]) -> list[str]:
    """The distinct files the rows come from (the part of ``source`` after the run time)."""
    return sorted({m.source.split("; ", 1)[-1] for m in rows})


def _unique(names: list[str]) -> list[str]:
    """Figure labels: a model measured twice gets ``(2)`` after its second bar."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return out


def _gpu_names(record: dict[str, Any]) -> list[str]:
    gpus = ((record.get("environment") or {}).get("gpu") or {}).get("gpus") or []
    return [str(g.get("name") or "?") for g in gpus if isinstance(g, dict)]


def build(
    runs: Any,
    *,
    task_class: str,
    queries: float | str | None = None,
    energy_scope: Scope = "gpu",
    reference: str | Path | None = None,
) -> Report:
    """The energy label of the runs (a RunSet or a list of run records).

    Args:
        runs: The runs of one model serving one task.
        task_class: The reference class (``object_detection``, ``text_classification`` ...).
        queries: Queries per run; else each run's ``queries`` tag.
        energy_scope: ``gpu`` (like the reference) or ``total`` (all components,
            not like-for-like, said in the label).
        reference: Another reference CSV in the same format.

    Raises:
        ConfigError: No runs, unknown class, a run without queries or energy.
    """
    if energy_scope not in ("gpu", "total"):
        raise ConfigError(f"energy_scope must be 'gpu' or 'total', not {energy_scope!r}")
    records = records_of(runs)
    ref = load_reference(reference)
    rows = ref.of(task_class)
    per_run = None if queries is None else parse_amount(str(queries), "queries option")
    values, rels = [], []
    for record in records:
        energy_j, rel = _energy(record, energy_scope)
        values.append(energy_j * 1000 / (_queries(record, per_run) * _J_PER_WH))
        rels.append(rel)
    mean = estimate(values, rels)
    low, high = rows[0].wh_per_1000_queries, rows[-1].wh_per_1000_queries
    stars, clamped = stars_for(mean.value, low, high)
    # More energy means fewer stars: the upper end of the interval gives the lowest rating.
    least = stars_for(mean.value + mean.uncertainty, low, high)[0]
    most = stars_for(max(mean.value - mean.uncertainty, 0.0), low, high)[0]
    band_list = bands(low, high)
    data = {
        "task_class": task_class,
        "stars": stars,
        "stars_within_uncertainty": [least, most],
        "wh_per_1000_queries": mean.value,
        "uncertainty_wh_per_1000_queries": mean.uncertainty,
        "clamped": clamped,
        "energy_scope": energy_scope,
        "runs": len(records),
        "bands": [
            {"stars": b.stars, "low_wh_per_1000_queries": b.low_wh,
             "high_wh_per_1000_queries": b.high_wh}
            for b in band_list
        ],
        "reference": {
            "name": ref.name, "version": ref.version, "models": len(rows),
            "min_wh_per_1000_queries": low, "max_wh_per_1000_queries": high,
            "sources": _sources(rows),
        },
    }  # fmt: skip
    sections = [
        _label_section(data, rows, band_list, records),
        _reference_section(rows, low, high, mean.value, mean.uncertainty),
    ]
    return Report(
        kind="label",
        title=f"Energy label: {stars} of {STARS} stars ({task_class})",
        sections=sections,
        data=data,
        runs=[str(r["id"]) for r in records],
        generated_at=datetime.now(timezone.utc).isoformat(),
    )


def _label_section(
    data: dict[str, Any], rows: list[ReferenceModel], band_list: list[Band], records: list[Any]
) -> Section:
    stars, value = data["stars"], data["wh_per_1000_queries"]
    unc, ref = data["uncertainty_wh_per_1000_queries"], data["reference"]
    scope = "GPU energy" if data["energy_scope"] == "gpu" else "energy of all measured components"
    band = next(b for b in band_list if b.stars == stars)
    lines = [
        f"{_stars_text(stars)} {stars} of {STARS} stars for {data['task_class']}: "
        f"{sig(value)} ± {sig(unc, 2)} Wh per 1,000 queries ({scope}, "
        f"mean of {data['runs']} run{'s' if data['runs'] != 1 else ''}).",
        f"Band {stars}: {sig(band.low_wh)}–{sig(band.high_wh)} Wh per 1,000 queries, one of "
        f"{STARS} equal-width bands between the most efficient reference model "
        f"({rows[0].model}, {sig(rows[0].wh_per_1000_queries)} Wh) and the least efficient "
        f"({rows[-1].model}, {sig(rows[-1].wh_per_1000_queries)} Wh) of {ref['models']} models.",
    ]
    if data["clamped"] == "below":
        lines.append(
            "The value is below the reference range (minimum "
            f"{sig(ref['min_wh_per_1000_queries'])} Wh): clamped to {STARS} stars."
        )
    elif data["clamped"] == "above":
        lines.append(
            "The value is above the reference range (maximum "
            f"{sig(ref['max_wh_per_1000_queries'])} Wh): clamped to 1 star."
        )
    low_s, high_s = data["stars_within_uncertainty"]
    lines.append(
        f"Within its uncertainty the value stays at {stars} stars."
        if low_s == high_s
        else f"Within its uncertainty the value spans {low_s} to {high_s} stars."
    )
    gpus = sorted({name for record in records for name in _gpu_names(record)})
    origin = (
        "AI Energy Score leaderboard data (v0), see data/SOURCES.md"
        if ref["name"] == REFERENCE_FILE
        else "a reference file given by the user"
    )
    lines.append(
        f"Reference set {ref['name']} (version {ref['version']}): {origin}; GPU energy per "
        f"1,000 queries on an {rows[0].gpu}, batch size 1. These runs ran on "
        f"{', '.join(gpus) or 'no GPU the records name'}: a different GPU, dataset or batch "
        "size is not like-for-like."
    )
    if data["energy_scope"] == "total":
        lines.append("The reference counts GPU energy only; this label counts all components.")
    table = Table(
        columns=["stars", "from (Wh / 1,000 queries)", "to (Wh / 1,000 queries)", ""],
        rows=[
            [_stars_text(b.stars), sig(b.low_wh), sig(b.high_wh), _marker(b.stars == stars)]
            for b in band_list
        ],
        title="Bands",
    )
    return Section(heading="Label", paragraphs=lines, tables=[table])


def _reference_section(
    rows: list[ReferenceModel], low: float, high: float, value: float, unc: float
) -> Section:
    energies = [m.wh_per_1000_queries for m in rows]
    table = Table(
        columns=["model", "Wh / 1,000 queries", "stars", "GPU"],
        rows=[
            [m.model, sig(wh), str(stars_for(wh, low, high)[0]), m.gpu]
            for m, wh in zip(rows, energies, strict=True)
        ],
        title="Reference models",
        note="Sources: " + " | ".join(_sources(rows)),
    )
    series = "Wh per 1,000 queries"
    figure = Figure(
        kind="bars",
        title="Energy per 1,000 queries: reference models and these runs",
        series=[
            Series(series, [*_unique([m.model for m in rows]), "these runs"], [*energies, value])
        ],
        x_label="model",
        y_label=series,
        error={series: [0.0] * len(rows) + [unc]},
    )
    return Section(heading="Reference", tables=[table], figures=[figure])

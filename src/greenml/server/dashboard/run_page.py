"""The run page: power per device over time, energy by method and uncertainty, carbon
with the grid intensity over the run, the footprint beyond it (market-based, embodied,
water, work done), cost, environment, diagnosis, ledger, downloads."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from greenml.errors import GreenmlError
from greenml.quantities import energy, mass, money, percent
from greenml.report.figures import intensity_over_run
from greenml.report.kinds import KINDS
from greenml.report.model import Figure, Series
from greenml.report.svg import esc
from greenml.server.api_runs import run_document
from greenml.server.dashboard.footprint import footprint_html
from greenml.server.dashboard.layout import figure_html, link, page, table
from greenml.server.state import scope, state_of

router = APIRouter(include_in_schema=False)
CHART_POINTS = 600


@router.get("/runs/{run_id}")
def run_view(request: Request, run_id: str) -> Response:
    where = scope(request, "read")
    doc = run_document(request, where, run_id, CHART_POINTS)
    record = doc["record"]
    title = record.get("name") or record["id"]
    body = "".join([
        f"<h1>Run {esc(title)}</h1>",
        _summary(record, doc),
        "<h2>Power</h2>", figure_html(power_figure(doc["samples"]), "power", "Power over time"),
        "<h2>Energy</h2>", _energy(record),
        "<h2>Carbon</h2>", _carbon(record),
        "<h2>Footprint beyond location-based carbon</h2>", footprint_html(record),
        "<h2>Cost</h2>", _cost(record),
        "<h2>Diagnosis</h2>", _diagnosis(request, where.project_id, record["id"]),
        "<h2>Environment</h2>", _environment(record.get("environment") or {}),
        "<h2>Ledger</h2>", _ledger(doc["ledger"]),
        "<h2>Reports</h2>", downloads(run=[record["id"]]),
    ])  # fmt: skip
    return page(f"Run {title}", body, project=where.project, csrf=where.csrf)


def power_figure(series: list[dict[str, Any]]) -> Figure | None:
    """Power of each device over the run (W), from the samples as the API gives them."""
    lines = [
        Series(f"{s['component']} {s['device']}",
               [t for t, p in zip(s["t"], s["power_w"], strict=True) if p is not None],
               [p for p in s["power_w"] if p is not None])
        for s in series if any(p is not None for p in s["power_w"])
    ]  # fmt: skip
    if not lines:
        return None
    return Figure(kind="line", title="Power over time, per device", series=lines,
                  x_label="time (UTC)", y_label="W")  # fmt: skip


def _summary(record: dict[str, Any], doc: dict[str, Any]) -> str:
    tags = ", ".join(f"{k}={v}" for k, v in (record.get("tags") or {}).items())
    items = [
        ("id", record["id"]), ("status", record.get("status")),
        ("exit code", record.get("exit_code")), ("started (UTC)", record.get("started_at")),
        ("duration", f"{record.get('duration_s') or 0:.1f} s"),
        ("user", (doc.get("upload") or {}).get("user")), ("tags", tags),
        ("command", " ".join(record.get("command") or [])),
    ]  # fmt: skip
    return "<dl class=\"kv\">" + "".join(
        f"<dt>{esc(k)}</dt><dd>{esc('' if v is None else v)}</dd>" for k, v in items
    ) + "</dl>"


def _energy(record: dict[str, Any]) -> str:
    block = record.get("energy") or {}
    total = float(block.get("total_j") or 0.0)
    rel = float(block.get("uncertainty_rel") or 0.0)
    rows = []
    for comp, c in (block.get("components") or {}).items():
        for dev, d in (c.get("devices") or {}).items():
            device_rel = float(d.get("uncertainty_rel") or 0)
            rows.append([comp, dev, d.get("name") or "", energy(float(d.get("energy_j") or 0)),
                         d.get("method") or "", "±" + percent(device_rel)])  # fmt: skip
    notes = "".join(f'<p class="note">{esc(n)}</p>' for n in (block.get("notes") or []))
    if block.get("note"):
        notes += f'<p class="note">{esc(block["note"])}</p>'
    return (f"<p><strong>{esc(energy(total, total * rel))}</strong> IT energy"
            f"{' (' + esc(block['method']) + ')' if block.get('method') else ''}</p>"
            + table(["component", "device", "model", "energy", "method", "uncertainty"], rows,
                    numeric=(3, 5)) + notes)  # fmt: skip


def _carbon(record: dict[str, Any]) -> str:
    carbon = record.get("carbon") or {}
    if carbon.get("kg") is None:
        why = carbon.get("reason") or carbon.get("hint") or "no carbon block: no location was set"
        return f'<p>Carbon unknown: {esc(why)}</p>'
    grams = float(carbon["kg"]) * 1000
    rel = float(carbon.get("uncertainty_rel") or 0)
    facts = [
        ("intensity", f"{carbon.get('intensity_g_per_kwh')} gCO2eq/kWh"),
        ("source", carbon.get("source")), ("kind", carbon.get("kind")),
        ("resolution", carbon.get("resolution")), ("location", carbon.get("location")),
        ("PUE", carbon.get("pue")), ("PUE source", carbon.get("pue_source")),
    ]  # fmt: skip
    return (f"<p><strong>{esc(mass(grams, grams * rel))}</strong> CO2eq</p>"
            + '<dl class="kv">' + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts
                                         if v is not None) + "</dl>"
            + _intensity(record))  # fmt: skip


def _intensity(record: dict[str, Any]) -> str:
    """The grid intensity over the run, or why there is no curve (one figure for the run)."""
    figure = intensity_over_run(record)
    if figure is None:
        return ('<p class="note">One intensity figure for the whole run (no hourly series '
                "over its time): no curve to draw.</p>")
    return figure_html(figure, "intensity")


def _cost(record: dict[str, Any]) -> str:
    cost = record.get("cost") or {}
    if cost.get("usd") is None:
        why = cost.get("reason") or cost.get("hint") or "no price was given"
        return f"<p>Cost unknown: {esc(why)}</p>"
    usd = float(cost["usd"])
    rel = float(cost.get("uncertainty_rel") or 0)
    return (f"<p><strong>{esc(money(usd, usd * rel))}</strong> ({esc(cost.get('basis') or '')}"
            f"{', ' + esc(cost['source']) if cost.get('source') else ''})</p>")


def _diagnosis(request: Request, project_id: int, run_id: str) -> str:
    from greenml.server.diagnosis import SCALING_NOTE, diagnose

    try:
        found = diagnose(state_of(request).store, project_id, run_id)
    except GreenmlError as exc:
        return f'<p class="muted">Not diagnosed: {esc(exc)}</p>'
    notes = "".join(f'<p class="note">{esc(n)}</p>' for n in [*found.notes, SCALING_NOTE])
    if not found.findings:
        return "<p>No waste found.</p>" + notes
    rows = [[f.severity, f.title, f.evidence, energy(f.energy_at_stake_j), f.recommendation]
            for f in found.findings]  # fmt: skip
    return table(["severity", "finding", "evidence", "at stake per run", "what to do"], rows,
                 numeric=(3,)) + notes  # fmt: skip


def _environment(env: dict[str, Any]) -> str:
    gpus = ", ".join(str(g.get("name")) for g in ((env.get("gpu") or {}).get("gpus") or []))
    facts = [
        ("greenml", env.get("greenml_version")),
        ("python", (env.get("python") or {}).get("version")),
        ("OS", (env.get("os") or {}).get("platform")),
        ("CPU", (env.get("cpu") or {}).get("model")),
        ("GPUs", gpus or None), ("git commit", (env.get("git") or {}).get("commit")),
        ("host", env.get("hostname")),
    ]  # fmt: skip
    shown = [(k, v) for k, v in facts if v]
    if not shown:
        return '<p class="muted">No environment recorded.</p>'
    items = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in shown)
    return f'<dl class="kv">{items}</dl>'


def _ledger(ledger: dict[str, Any]) -> str:
    entry = ledger.get("entry") or {}
    signed = "signed" if entry.get("signature") else "unsigned"
    detail = f" (entry {esc(entry.get('seq'))}, {signed})" if entry else ""
    return f"<p>{esc(ledger.get('status'))}{detail}</p>"


def downloads(**params: Any) -> str:
    """Links to every report kind in every format, for the given runs or tags."""
    rows = [[kind, *(link(f"/download/{kind}", fmt, **params, format=fmt)
                     for fmt in ("html", "md", "json"))] for kind in KINDS]  # fmt: skip
    return table(["report", "HTML", "Markdown", "JSON"], rows) + (
        '<p class="note">Some kinds need options (label: the task class …); '
        "the answer says which.</p>"
    )


__all__ = ["downloads", "power_figure", "router"]

"""The project page (energy, CO2eq and cost per week, top consumers, how much is known)
and the comparison of two runs or two tags with the CI gate's verdict."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from greenml.errors import ConfigError, GreenmlError
from greenml.quantities import energy, energy_axis, mass, mass_axis, money, percent
from greenml.report.model import Figure, Series
from greenml.report.svg import esc
from greenml.server.dashboard.layout import figure_html, link, page, table
from greenml.server.dashboard.run_page import downloads
from greenml.server.reports import MAX_REPORT_RUNS
from greenml.server.state import scope, state_of
from greenml.store import query
from greenml.store.record import iso_utc

router = APIRouter(include_in_schema=False)
PERIODS_SHOWN = 26


@router.get("/project")
def project_view(request: Request, period: str = "week") -> Response:
    where = scope(request, "read")
    store = state_of(request).store
    if period not in query.PERIODS:
        raise ConfigError(f"period must be one of {', '.join(query.PERIODS)}")
    latest = query.latest_start(store, where.project_id)
    since = None if latest is None else latest - PERIODS_SHOWN * query.PERIOD_S[period]
    buckets = query.aggregate(store, where.project_id, period, since)[-PERIODS_SHOWN:]
    top = query.top_runs(store, where.project_id, 10)
    runs = sum(b["runs"] for b in buckets)
    known = sum(b["co2_known_runs"] for b in buckets)
    total_j = sum(b["energy_j"] or 0 for b in buckets)
    measured = sum((b["measured_share"] or 0) * (b["energy_j"] or 0) for b in buckets)
    labels = [b["period_start"] for b in buckets]
    e_scale, e_unit = energy_axis(max((b["energy_j"] or 0 for b in buckets), default=0.0))
    g_scale, g_unit = mass_axis(max((b["co2_g"] or 0 for b in buckets), default=0.0))
    figures = [
        (title, _bars(title, unit, labels, buckets, key, scale))
        for title, unit, key, scale in (
            (f"IT energy per {period}", e_unit, "energy_j", 1 / e_scale),
            (f"CO2eq per {period}, runs with known carbon", g_unit, "co2_g", 1 / g_scale),
            (f"Cost per {period}, runs with a known price", "USD", "cost_usd", 1.0),
        )
    ]  # fmt: skip
    upto = "" if latest is None else f" up to the latest run ({iso_utc(latest)[:10]})"  # type: ignore[index]
    span = f"the {PERIODS_SHOWN} {period}s{upto}"
    summary = (
        f"<p>In {span}: {runs} runs uploaded; <strong>{esc(energy(total_j))}</strong> IT energy, "
        f"{esc(percent(measured / total_j) if total_j else 'none')} of it measured (counters or "
        f"sampled power), the rest estimated. Carbon known for {known} of {runs} runs "
        f"({esc(percent(known / runs) if runs else '0 %')}).</p>"
    )
    rows = [[link(f"/runs/{t['id']}", t["id"]), t.get("name") or "", t.get("user") or "",
             energy(t["energy_j"]), _maybe(t["co2_g"], mass), _maybe(t["cost_usd"], money)]
            for t in top]  # fmt: skip
    periods = " · ".join(str(link("/project", p, period=p)) for p in query.PERIODS)
    body = (
        f"<h1>Project {esc(where.project)}</h1>{summary}<p>Per {periods}</p>"
        + "".join(figure_html(f, f"project-{i}", f"{title}: none known")
                  for i, (title, f) in enumerate(figures))
        + "<h2>Top consumers (all time)</h2>"
        + table(["run", "name", "user", "energy", "CO2eq", "cost"], rows, numeric=(3, 4, 5))
        + "<h2>Per period</h2>"
        + table(["from", "runs", "energy", "measured", "CO2eq", "carbon known", "cost"],
                [[b["period_start"], b["runs"], energy(b["energy_j"] or 0,
                  b["energy_uncertainty_j"]), percent(b["measured_share"] or 0),
                  _known(b, "co2_g", mass), f"{b['co2_known_runs']} of {b['runs']}",
                  _known(b, "cost_usd", money)] for b in reversed(buckets)],
                numeric=(1, 2, 3, 4, 6))
    )
    return page(f"Project {where.project}", body, project=where.project, csrf=where.csrf)


def _bars(title: str, unit: str, labels: list[str], buckets: list[dict[str, Any]], key: str,
          scale: float) -> Figure | None:  # fmt: skip
    """Bars of ``key`` per period with ± whiskers; None when no period knows it."""
    known = key.split("_")[0] + "_known_runs"
    if key != "energy_j" and not any(b[known] for b in buckets):
        return None
    unc = "energy_uncertainty_j" if key == "energy_j" else key.replace("_", "_uncertainty_", 1)
    values = [(b[key] or 0.0) * scale for b in buckets]
    errors = [(b[unc] or 0.0) * scale for b in buckets]
    return Figure(kind="bars", title=title, series=[Series(unit, list(labels), values)],
                  x_label="period (UTC)", y_label=unit, error={unit: errors})  # fmt: skip


def _known(bucket: dict[str, Any], key: str, fmt: Any) -> str:
    """A period's carbon or cost with its uncertainty, ``unknown`` when no run knows it."""
    if not bucket[key.split("_")[0] + "_known_runs"]:
        return "unknown"
    unit = key.split("_")[1]
    return str(fmt(bucket[key], bucket[f"{key.split('_')[0]}_uncertainty_{unit}"]))


@router.get("/compare")
def compare_view(
    request: Request, a: str = "", b: str = "", tag_a: str = "", tag_b: str = "",
    allowed: float = 5.0,
) -> Response:  # fmt: skip
    """Baseline ``a`` (run id) or ``tag_a`` (KEY=VALUE) against candidate ``b`` / ``tag_b``."""
    where = scope(request, "read")
    form = (
        '<form class="filters" method="get" action="/compare">'
        + "".join(f'<label>{esc(label)}<input name="{k}" value="{esc(v)}"></label>'
                  for k, label, v in (
                      ("a", "baseline run", a), ("tag_a", "or baseline tag", tag_a),
                      ("b", "candidate run", b), ("tag_b", "or candidate tag", tag_b),
                      ("allowed", "allowed increase %", f"{allowed:g}")))
        + '<button type="submit">Compare</button></form>'
    )  # fmt: skip
    body = f"<h1>Compare runs</h1>{form}"
    if (a or tag_a) and (b or tag_b):
        body += _verdict(request, where, (a, tag_a), (b, tag_b), allowed / 100)
    return page("Compare", body, project=where.project, csrf=where.csrf)


def _side(request: Request, where: Any, run_id: str, tag: str) -> list[dict[str, Any]]:
    store = state_of(request).store
    if run_id:
        if query.project_of_run(store, run_id) != where.project_id:
            raise ConfigError(f"no run {run_id!r} in project {where.project!r}")
        return [store.get_record(run_id, exact=True)]
    key, sep, value = tag.partition("=")
    if not sep:
        raise ConfigError(f"tag must be KEY=VALUE, not {tag!r}")
    found, _ = query.find_runs(store, query.RunFilter(project_id=where.project_id,
                                                      tags={key: value}),
                               limit=min(MAX_REPORT_RUNS, query.MAX_PAGE))  # fmt: skip
    if not found:
        raise ConfigError(f"no runs of the project carry {tag}")
    return [store.get_record(r["id"], exact=True) for r in found]


def _verdict(request: Request, where: Any, base: tuple[str, str], cand: tuple[str, str],
             allowed: float) -> str:  # fmt: skip
    from greenml.report.gate import check

    try:
        baseline, candidate = _side(request, where, *base), _side(request, where, *cand)
        verdict = check(baseline, candidate, allowed)
    except GreenmlError as exc:
        return f'<p class="error">Cannot compare: {esc(exc)}</p>'
    rows = []
    for side, records in (("baseline", baseline), ("candidate", candidate)):
        for r in records:
            e = r.get("energy") or {}
            total = float(e.get("total_j") or 0)
            kg = (r.get("carbon") or {}).get("kg")
            rows.append([side, link(f"/runs/{r['id']}", r["id"]), r.get("name") or "",
                         energy(total, total * float(e.get("uncertainty_rel") or 0)),
                         _maybe(None if kg is None else float(kg) * 1000, mass)])  # fmt: skip
    params = {"run": [r["id"] for r in baseline + candidate]}
    css = "verdict fail" if verdict.outcome == "fail" else "verdict"
    return (f'<p class="{css}" data-outcome="{esc(verdict.outcome)}">{esc(verdict.line())}</p>'
            + table(["side", "run", "name", "energy", "CO2eq"], rows, numeric=(3, 4))
            + "<h2>Reports of these runs</h2>" + downloads(**params))  # fmt: skip


def _maybe(value: float | None, fmt: Any) -> str:
    return "unknown" if value is None else str(fmt(value))

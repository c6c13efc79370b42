"""The project page: energy, CO2eq and cost per week, top consumers, how much is known
(the comparison of runs is :mod:`compare_page`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from greenml.errors import ConfigError
from greenml.quantities import energy, energy_axis, mass, mass_axis, money, percent
from greenml.report.model import Figure, Series
from greenml.report.svg import esc
from greenml.server.dashboard.layout import figure_html, link, page, table
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


def _maybe(value: float | None, fmt: Any) -> str:
    return "unknown" if value is None else str(fmt(value))

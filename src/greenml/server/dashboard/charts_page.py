"""Cross-run charts of a project: energy, CO2eq and cost per day, stacked by run name,
user or the value of a tag; and energy per unit of work of every run over time.

Every axis is in the unit that fits its largest value (:mod:`greenml.quantities`):
a day of small runs reads ``66 µUSD`` or ``50 mg``, never ``5e-05``.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timezone
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from greenml.errors import ConfigError, GreenmlError
from greenml.quantities import energy_axis, mass_axis, money_axis
from greenml.report.model import Figure, Series
from greenml.report.svg import esc
from greenml.report.work import display_per, per_label, work_tags
from greenml.server.dashboard.layout import figure_html, link, page
from greenml.server.state import scope, state_of
from greenml.store import query, query_table

router = APIRouter(include_in_schema=False)
GROUPS_SHOWN = 6
"""Groups drawn in their own colour; the rest are summed as ``other``."""
METRICS = (  # (key, title, known-runs key, axis)
    ("energy_j", "IT energy", "", energy_axis),
    ("co2_g", "CO2eq, runs with known carbon", "co2_known_runs", mass_axis),
    ("cost_usd", "Cost, runs with a known price", "cost_known_runs", money_axis),
)  # fmt: skip


@router.get("/charts")
def charts_view(
    request: Request, by: str = "name", key: str = "", days: int = Query(30, ge=1, le=366)
) -> Response:
    """Per-day charts of the ``days`` up to the project's latest run, grouped ``by``."""
    where = scope(request, "read")
    store = state_of(request).store
    if by not in query_table.GROUPS:
        raise ConfigError(f"by must be one of {', '.join(query_table.GROUPS)}")
    latest = query.latest_start(store, where.project_id)
    since = None if latest is None else (latest // 86400 - days + 1) * 86400
    rows = query_table.per_day(store, where.project_id, by, key, since) if key or by != "tag" \
        else []  # fmt: skip
    what = f"tag {key}" if by == "tag" else by
    body = (f"<h1>Charts of {esc(where.project)}</h1>{_form(by, key, days)}"
            f"<p>The {days} days (UTC) up to the latest run, stacked by {esc(what)}; "
            f"the {GROUPS_SHOWN} largest have their own colour.</p>")  # fmt: skip
    if by == "tag" and not key:
        body += '<p class="error">Name the tag key to group by (for example team).</p>'
    for metric, title, known, axis in METRICS:
        figure = _stacked(rows, metric, known, axis, f"{title} per day by {what}")
        body += figure_html(figure, f"chart-{metric}", f"{title} per day: none known")
    body += "<h2>Energy per unit of work over time</h2>" + _work(store, where.project_id, since)
    return page("Charts", body, project=where.project, csrf=where.csrf)


def _form(by: str, key: str, days: int) -> str:
    options = "".join(f'<option value="{g}"{" selected" if g == by else ""}>{g}</option>'
                      for g in query_table.GROUPS)  # fmt: skip
    links = " · ".join(str(link("/charts", f"{n} days", by=by, key=key, days=n))
                       for n in (7, 30, 90, 365))  # fmt: skip
    return ('<form class="filters" method="get" action="/charts">'
            f'<label>group by<select name="by">{options}</select></label>'
            f'<label>tag key<input name="key" value="{esc(key)}" placeholder="team"></label>'
            f'<label>days<input name="days" value="{days}" size="4" inputmode="numeric"></label>'
            f'<button type="submit">Show</button></form><p>Last {links}</p>')  # fmt: skip


def _day(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).date().isoformat()


def _stacked(rows: list[dict[str, Any]], metric: str, known: str, axis: Any,
             title: str) -> Figure | None:  # fmt: skip
    """Stacked bars of ``metric`` per day: one series per group (largest first), or None."""
    rows = [r for r in rows if r[metric] is not None and (not known or r[known])]
    if not rows:
        return None
    totals: dict[str, float] = defaultdict(float)
    per_day: dict[str, float] = defaultdict(float)
    for r in rows:
        totals[_group(r)] += float(r[metric])
        per_day[_day(r["day"])] += float(r[metric])
    ranked = sorted(totals, key=lambda g: -totals[g])
    shown = set(ranked[:GROUPS_SHOWN])
    scale, unit = axis(max(per_day.values()))
    days = sorted(per_day)
    cells: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for r in rows:
        group = _group(r) if _group(r) in shown else "other"
        cells[group][_day(r["day"])] += float(r[metric]) / scale
    order = [g for g in ranked if g in shown] + (["other"] if "other" in cells else [])
    series = [Series(g, days, [cells[g].get(d, 0.0) for d in days]) for g in order]
    return Figure(kind="stacked-bars", title=title, series=series, x_label="day (UTC)",
                  y_label=unit)  # fmt: skip


def _group(row: dict[str, Any]) -> str:
    return "(none)" if row["group"] in (None, "") else str(row["group"])


def _work(store: Any, project_id: int, since: float | None) -> str:
    """A line per unit of work: each run's energy per unit, at its start."""
    points: dict[str, list[tuple[float, float]]] = defaultdict(list)
    skipped = 0
    for run in query_table.work_runs(store, project_id, since):
        try:
            found = work_tags(run)
        except GreenmlError:
            skipped += 1
            continue
        for unit, work in found.items():
            points[unit].append((run["started_at"], run["energy_j"] / work.amount))
    if not points:
        return ('<p class="muted">No run of these days states its work (tag samples=N, '
                "tokens=N … or work=N with work_unit=UNIT).</p>")
    out = []
    for unit, line in sorted(points.items()):
        per = display_per(unit)
        scale, axis_name = energy_axis(max(v * per for _, v in line))
        series = Series(f"{axis_name} {per_label(unit)}", [t for t, _ in line],
                        [v * per / scale for _, v in line])  # fmt: skip
        figure = Figure(kind="line", title=f"Energy {per_label(unit)}, each run at its start",
                        series=[series], x_label="run start (UTC)",
                        y_label=f"{axis_name} {per_label(unit)}")  # fmt: skip
        out.append(figure_html(figure, f"work-{unit}"))
    if skipped:
        out.append(f'<p class="note">{skipped} runs left out: their work tags are not '
                   "positive numbers.</p>")  # fmt: skip
    return "".join(out)


__all__ = ["router"]

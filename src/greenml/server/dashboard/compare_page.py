"""The comparison of up to 8 runs or tags: each one's energy, CO2eq and cost, a chart of
their energy, and the CI gate's verdict for every pair (:func:`greenml.report.gate.check`,
the same test ``greenml check`` runs: an earlier item is the baseline of a later one)."""

from __future__ import annotations

from itertools import combinations
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from greenml.errors import ConfigError, GreenmlError
from greenml.quantities import energy, energy_axis, mass, money
from greenml.report.model import Figure, Series
from greenml.report.svg import esc
from greenml.server.dashboard.layout import Markup, figure_html, link, page, table
from greenml.server.dashboard.run_page import downloads
from greenml.server.reports import MAX_REPORT_RUNS
from greenml.server.state import scope, state_of
from greenml.store import query

router = APIRouter(include_in_schema=False)
MAX_ITEMS = 8
"""Runs or tags compared at once."""


@router.get("/compare")
def compare_view(
    request: Request, item: Annotated[list[str] | None, Query()] = None, a: str = "",
    b: str = "", tag_a: str = "", tag_b: str = "", allowed: float = 5.0,
) -> Response:  # fmt: skip
    """``item``: run ids or ``KEY=VALUE`` tags, in order (``a``/``tag_a``, ``b``/``tag_b``:
    the two-way form of earlier versions)."""
    where = scope(request, "read")
    items = [i.strip() for i in (item or []) if i.strip()]
    items += [x for x in (a or tag_a, b or tag_b) if x]
    fields = [*items, *[""] * (MAX_ITEMS - len(items))][:MAX_ITEMS]
    form = (
        '<form class="filters" method="get" action="/compare">'
        + "".join(f'<label>{"baseline" if n == 0 else f"item {n + 1}"}'
                  f'<input name="item" value="{esc(v)}" placeholder="run id or KEY=VALUE">'
                  "</label>" for n, v in enumerate(fields))
        + f'<label>allowed increase %<input name="allowed" value="{allowed:g}" size="5">'
        "</label><button type=\"submit\">Compare</button></form>"
    )  # fmt: skip
    body = (f"<h1>Compare runs</h1><p>Up to {MAX_ITEMS} runs or tags (KEY=VALUE: all the "
            "runs that carry it). Each pair gets the CI gate's verdict, the earlier item as "
            f"the baseline.</p>{form}")  # fmt: skip
    if len(items) > MAX_ITEMS:
        body += f'<p class="error">Compare at most {MAX_ITEMS} runs or tags at once.</p>'
    elif len(items) >= 2:
        body += _comparison(request, where, items, allowed / 100)
    return page("Compare", body, project=where.project, csrf=where.csrf)


def _records(request: Request, where: Any, item: str) -> list[dict[str, Any]]:
    """The records an item names: one run (by id) or every run carrying a tag."""
    store = state_of(request).store
    key, sep, value = item.partition("=")
    if not sep:
        if query.project_of_run(store, item) != where.project_id:
            raise ConfigError(f"no run {item!r} in project {where.project!r}")
        return [store.get_record(item, exact=True)]
    found, _ = query.find_runs(store, query.RunFilter(project_id=where.project_id,
                                                      tags={key: value}),
                               limit=min(MAX_REPORT_RUNS, query.MAX_PAGE))  # fmt: skip
    if not found:
        raise ConfigError(f"no runs of the project carry {item}")
    return [store.get_record(r["id"], exact=True) for r in found]


def _comparison(request: Request, where: Any, items: list[str], allowed: float) -> str:
    from greenml.report.gate import check

    try:
        sides = [_records(request, where, i) for i in items]
    except GreenmlError as exc:
        return f'<p class="error">Cannot compare: {esc(exc)}</p>'
    lines, cells = [], {}
    for i, j in combinations(range(len(items)), 2):
        try:
            verdict = check(sides[i], sides[j], allowed)
        except GreenmlError as exc:
            cells[i, j] = Markup(f'<span class="error">{esc(exc)}</span>')
            continue
        moved = verdict.change
        css = "verdict fail" if verdict.outcome == "fail" else "verdict"
        cells[i, j] = Markup(
            f'<span data-outcome="{esc(verdict.outcome)}" title="{esc(verdict.line())}">'
            f"<strong>{esc(verdict.outcome.upper())}</strong> "
            f"{moved.change_rel * 100:+.1f} % ± {moved.uncertainty_rel * 100:.1f} %</span>"
        )  # fmt: skip
        if i == 0:
            lines.append(f'<p class="{css}" data-outcome="{esc(verdict.outcome)}">'
                         f"{esc(items[j])} against {esc(items[0])}: {esc(verdict.line())}</p>")
    matrix = [[f"{n + 1}. {items[n]}", *(cells.get((n, m), "") for m in range(1, len(items)))]
              for n in range(len(items) - 1)]  # fmt: skip
    params = {"run": [r["id"] for side in sides for r in side]}
    return (
        "<h2>Each run or tag</h2>" + table(
            ["item", "runs", "mean energy", "mean CO2eq", "mean cost"],
            [_summary(n, i, side) for n, (i, side) in enumerate(zip(items, sides, strict=True))],
            numeric=(1, 2, 3, 4))
        + figure_html(_energy_figure(items, sides), "compare-energy", "Mean energy")
        + "<h2>The gate's verdict per pair</h2>"
        + '<p class="note">Row: the baseline; column: the candidate. Energy per unit of work '
        "when both sides state it, else per run; the increase with its uncertainty.</p>"
        + table(["baseline ↓ candidate →",
                 *(f"{m + 1}. {items[m]}" for m in range(1, len(items)))], matrix)
        + "".join(lines)
        + "<h2>Reports of these runs</h2>" + downloads(**params)
    )  # fmt: skip


def _totals(side: list[dict[str, Any]]) -> tuple[float, float, float | None, float | None]:
    """Mean energy (J), its uncertainty (J), mean CO2eq (g) and cost (USD) of runs (None:
    not known for every run)."""
    joules = [float((r.get("energy") or {}).get("total_j") or 0) for r in side]
    rel = [float((r.get("energy") or {}).get("uncertainty_rel") or 0) for r in side]
    kg: list[Any] = [(r.get("carbon") or {}).get("kg") for r in side]
    usd: list[Any] = [(r.get("cost") or {}).get("usd") for r in side]
    n = len(side)
    co2 = None if None in kg else sum(float(k) for k in kg) * 1000 / n
    cost = None if None in usd else sum(float(u) for u in usd) / n
    return sum(joules) / n, sum(j * u for j, u in zip(joules, rel, strict=True)) / n, co2, cost


def _summary(n: int, item: str, side: list[dict[str, Any]]) -> list[Any]:
    mean_j, unc_j, co2, cost = _totals(side)
    label = link(f"/runs/{item}", item) if "=" not in item else item
    return [Markup(f"{n + 1}. {label}" if "=" not in item else esc(f"{n + 1}. {item}")),
            len(side), energy(mean_j, unc_j),
            "unknown" if co2 is None else mass(co2), "unknown" if cost is None else money(cost)]


def _energy_figure(items: list[str], sides: list[list[dict[str, Any]]]) -> Figure:
    """Bars of each item's mean energy, with ± whiskers, in the unit that fits."""
    totals = [_totals(side) for side in sides]
    scale, unit = energy_axis(max(t[0] for t in totals))
    labels = [f"{n + 1}" for n in range(len(items))]
    return Figure(kind="bars", title="Mean energy per run of each item", x_label="item",
                  y_label=unit, series=[Series(unit, labels, [t[0] / scale for t in totals])],
                  error={unit: [t[1] / scale for t in totals]})  # fmt: skip


__all__ = ["MAX_ITEMS", "router"]

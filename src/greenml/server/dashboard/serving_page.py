"""The serving page: a project's LLM proxies — requests, J per token over time, idle share,
the models and the tenants that used the most energy."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from greenml.quantities import energy, energy_axis, mass, percent, sig
from greenml.report.model import Figure, Series
from greenml.report.svg import esc
from greenml.server.api_runs import parse_time
from greenml.server.api_serving import BUCKETS, figures
from greenml.server.dashboard.layout import figure_html, link, page, table
from greenml.server.state import scope, state_of
from greenml.store import serving
from greenml.store.record import iso_utc

router = APIRouter(include_in_schema=False)
SPAN_S = {"minute": 6 * 3600.0, "hour": 7 * 86400.0, "day": 90 * 86400.0}
"""How far back each bucket size looks, from the newest minute sent."""


@router.get("/serving")
def serving_view(request: Request, bucket: str = "hour", since: str = "") -> Response:
    where = scope(request, "read")
    latest = serving.latest_minute(state_of(request).store, where.project_id)
    if bucket not in BUCKETS:
        bucket = "hour"
    start = parse_time(since, "since") if since else None
    if start is None and latest is not None:
        start = latest + 60 - SPAN_S[bucket]
    doc = figures(request, where.project_id, where.project, start, None, bucket)
    sizes = " · ".join(str(link("/serving", b, bucket=b)) for b in BUCKETS)
    body = f"<h1>LLM serving · project {esc(where.project)}</h1>"
    if latest is None:
        body += (
            "<p>No proxy has sent figures yet. Start one with a token of this project: "
            "<code>GREENML_TOKEN=… greenml llm proxy --upstream URL --server "
            f"{esc(str(request.base_url).rstrip('/'))}</code>.</p>"
        )
        return page("LLM serving", body, project=where.project)
    first = doc["series"][0]["start"] if doc["series"] else start
    body += _summary(doc, first) + f"<p>Per {sizes}</p>"
    body += "".join(figure_html(f, f"serving-{i}", title)
                    for i, (title, f) in enumerate(_charts(doc)))  # fmt: skip
    body += "<h2>Tenants that used the most energy</h2>" + _table(doc["tenants"], "tenant")
    body += "<h2>Models</h2>" + _table(doc["models"], "model")
    body += (
        '<p class="note">Each interval\'s metered energy is split between the requests in '
        "flight by their work (prompt tokens weighted by the estimated prefill/decode cost "
        "ratio, and generated tokens); intervals with nothing in flight are idle. Attributed "
        "+ idle = metered. Uncertainties add linearly (one sensor per proxy). "
        f"Measured by: {esc(', '.join(doc['methods']) or 'unknown')}.</p>"
    )
    return page("LLM serving", body, project=where.project)


def _summary(doc: dict[str, Any], start: float | None) -> str:
    t = doc["totals"]
    since = "" if start is None else f"Since {esc(_utc(start))} UTC: "
    co2 = "unknown (no location set on the proxy)" if t["co2eq_g"] is None else mass(t["co2eq_g"])
    return (
        f"<p>{since}<strong>{t['requests']:,}</strong> requests "
        f"({t['cancelled']:,} cancelled, {t['errors']:,} errors), "
        f"{t['prompt_tokens']:,} prompt and {t['completion_tokens']:,} output tokens.</p>"
        '<dl class="kv">'
        f"<dt>J per output token</dt><dd>{_j(t['j_per_output_token'])}</dd>"
        f"<dt>J per prompt token</dt><dd>{_j(t['j_per_prompt_token'])}</dd>"
        f"<dt>Energy per request</dt><dd>{_j(t['j_per_request'])}</dd>"
        f"<dt>Attributed to requests</dt><dd>{esc(energy(t['energy_j'], t['uncertainty_j']))}"
        "</dd>"
        f"<dt>Idle (nothing in flight)</dt><dd>{esc(energy(t['idle_j']))}, "
        f"{esc(_share(t['idle_share']))} of {esc(energy(t['metered_j']))} metered</dd>"
        f"<dt>CO2eq (requests and idle)</dt><dd>{esc(co2)}</dd></dl>"
    )


def _charts(doc: dict[str, Any]) -> list[tuple[str, Figure | None]]:
    series = doc["series"]
    per = doc["bucket"]
    xs = [s["start"] for s in series]
    j_token = [_nan(s["j_per_output_token"]) for s in series]
    token_figure = Figure(
        kind="line", title=f"J per output token, per {per}",
        series=[Series("J per output token", xs, j_token),
                Series("J per prompt token", xs, [_nan(s["j_per_prompt_token"]) for s in series])],
        x_label="time (UTC)", y_label="J per token",
    )  # fmt: skip
    scale, unit = energy_axis(max((s["metered_j"] for s in series), default=0.0))
    labels = [_utc(x) for x in xs]
    energy_figure = Figure(
        kind="stacked-bars", title=f"Energy per {per}: prefill, decode, idle ({unit})",
        series=[Series(name, labels, [s[key] / scale for s in series])
                for name, key in (("prefill", "prefill_j"), ("decode", "decode_j"),
                                  ("idle", "idle_j"))],
        x_label=f"{per} (UTC)", y_label=unit,
    )  # fmt: skip
    requests = Figure(kind="bars", title=f"Requests per {per}",
                      series=[Series("requests", labels, [float(s["requests"]) for s in series])],
                      x_label=f"{per} (UTC)", y_label="requests")  # fmt: skip
    has_tokens = any(v == v for v in j_token)
    return [
        ("J per output token: no output tokens yet", token_figure if has_tokens else None),
        ("Energy: none", energy_figure if series else None),
        ("Requests: none", requests if series else None),
    ]


def _table(rows: list[dict[str, Any]], what: str) -> str:
    if not rows:
        return '<p class="muted">None yet.</p>'
    body = [[r["name"] or "(none)", f"{r['requests']:,}", energy(r["energy_j"], r["uncertainty_j"]),
             _j(r["j_per_output_token"]), _j(r["j_per_prompt_token"]),
             "unknown" if r["co2eq_g"] is None else mass(r["co2eq_g"])] for r in rows]  # fmt: skip
    return table([what, "requests", "energy", "J per output token", "J per prompt token",
                  "CO2eq"], body, numeric=(1, 2, 3, 4, 5))  # fmt: skip


def _utc(unix_s: float) -> str:
    return str(iso_utc(unix_s))[:16].replace("T", " ")


def _j(value: float | None) -> str:
    return "-" if value is None else f"{sig(value)} J"


def _share(value: float | None) -> str:
    return "-" if value is None else percent(value)


def _nan(value: float | None) -> float:
    return float("nan") if value is None else value

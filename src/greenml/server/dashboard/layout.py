"""The page shell of the dashboard: style, navigation, escaping, figures, errors."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from urllib.parse import urlencode

from starlette.responses import HTMLResponse

from greenml import __version__
from greenml.report.bars import bar_chart
from greenml.report.line import line_chart
from greenml.report.model import Figure
from greenml.report.svg import esc, no_data

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")  # fmt: skip
"""No script runs on a dashboard page, whatever a run's name or tags hold."""

STYLE = """
:root { color-scheme: light; --ink: #222; --muted: #666; --rule: #d9d9d9; --accent: #2f6b4f; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; }
header.bar { background: var(--accent); color: #fff; padding: .5rem 1.5rem; display: flex;
  gap: 1.5rem; align-items: center; flex-wrap: wrap; }
header.bar a { color: #fff; text-decoration: none; font-weight: 600; }
header.bar form { margin-left: auto; }
.page { max-width: 80rem; margin: 0 auto; padding: 1.5rem; }
h1 { font-size: 1.5rem; margin: .2rem 0 1rem; overflow-wrap: break-word; }
h2 { font-size: 1.15rem; margin: 2rem 0 .5rem; border-bottom: 1px solid var(--rule); }
table { border-collapse: collapse; width: 100%; font-size: .85rem;
  font-variant-numeric: tabular-nums; }
th, td { padding: .3rem .4rem; border-bottom: 1px solid var(--rule); text-align: left;
  vertical-align: top; overflow-wrap: normal; word-break: normal; hyphens: manual; }
.scroll { overflow-x: auto; max-width: 100%; }
.scroll:focus { outline: 2px solid var(--accent); }
th a { color: inherit; } th[aria-sort] a { text-decoration: none; }
.nw { white-space: nowrap; }
.id { font-family: ui-monospace, monospace; font-size: .75rem; }
thead th { background: #f6f7f6; border-bottom: 2px solid #999; }
.num { text-align: right; white-space: nowrap; }
.muted, .note { color: var(--muted); font-size: .85rem; }
.saved { display: flex; gap: .5rem 1rem; flex-wrap: wrap; align-items: center; }
.saved form { display: inline; }
button.link { background: none; color: #1a4d8f; text-decoration: underline; padding: 0; }
form.filters { display: flex; gap: .5rem; flex-wrap: wrap; align-items: end; margin-bottom: 1rem; }
form.filters label { display: flex; flex-direction: column; font-size: .8rem; color: var(--muted); }
input, select, button { font: inherit; padding: .25rem .4rem; }
button { background: var(--accent); color: #fff; border: 0; border-radius: 3px; cursor: pointer; }
.greenml-figure svg { display: block; width: 100%; height: auto; max-width: 960px; }
figure { margin: 1rem 0; } figcaption { font-weight: 600; }
.verdict { font-weight: 600; padding: .5rem .75rem; border-left: 4px solid var(--accent); }
.verdict.fail { border-color: #b3261e; }
.error { color: #b3261e; font-weight: 600; }
dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
dl.kv dt { color: var(--muted); } dl.kv dd { margin: 0; overflow-wrap: break-word; min-width: 0; }
"""


CSRF_FIELD = "csrf"
"""The form field that carries the session's CSRF token (see :mod:`greenml.server.auth`)."""


def page(
    title: str, body: str, *, project: str | None = None, csrf: str = "", status: int = 200
) -> HTMLResponse:
    """A whole HTML page (escaped ``title``; ``body`` is already HTML).

    ``csrf``: the session's CSRF token, carried by the sign-out form.
    """
    nav = ""
    if project is not None:
        hidden = f'<input type="hidden" name="{CSRF_FIELD}" value="{esc(csrf)}">' if csrf else ""
        nav = (
            f'<a href="/runs">Runs</a><a href="/jobs">Jobs</a>'
            f'<a href="/project">Project {esc(project)}</a>'
            '<a href="/serving">Serving</a>'
            '<a href="/charts">Charts</a>'
            '<a href="/compare">Compare</a>'
            f'<form method="post" action="/logout">{hidden}'
            '<button type="submit">Sign out</button></form>'
        )
    html = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · greenml</title><style>{STYLE}</style></head><body>"
        f'<header class="bar"><a href="/">greenml</a>{nav}</header>'
        f'<main class="page">{body}</main>'
        f'<footer class="page muted">greenml {esc(__version__)} team server</footer>'
        "</body></html>"
    )
    return HTMLResponse(html, status_code=status, headers=security_headers())


def security_headers() -> dict[str, str]:
    """Headers of every dashboard page: no script, no framing, no sniffing, no caching."""
    return {
        "Content-Security-Policy": CSP,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",
        "Cache-Control": "no-store",
    }


def error_page(status: int, message: str) -> HTMLResponse:
    """An error as a page: the one line, and a way back."""
    link = '<a href="/login">Sign in</a>' if status == 401 else '<a href="/runs">Back to runs</a>'
    body = f'<h1>Error {status}</h1><p class="error">{esc(message)}</p><p>{link}</p>'
    return page(f"Error {status}", body, status=status)


def figure_html(figure: Figure | None, ident: str, title: str = "") -> str:
    """A figure drawn by the report renderer (or a 'no data' panel)."""
    if figure is None:
        svg = no_data(ident, title or "No data")
        kind = "none"
    elif figure.kind == "line":
        svg, kind = line_chart(figure, ident), "line"
    else:
        svg, kind = bar_chart(figure, ident, stacked=figure.kind == "stacked-bars"), figure.kind
    caption = figure.title if figure is not None else title
    return (f'<figure class="greenml-figure" data-kind="{esc(kind)}" id="{esc(ident)}">'
            f"<figcaption>{esc(caption)}</figcaption>{svg}</figure>")  # fmt: skip


def table(
    columns: Sequence[str], rows: Iterable[Sequence[object]], numeric: Sequence[int] = ()
) -> str:
    """A table of escaped cells; ``rows`` cells are plain text, or ``Markup`` (already HTML)."""
    head = "".join(f'<th scope="col" class="{"num" if i in numeric else ""}">{esc(c)}</th>'
                   for i, c in enumerate(columns))  # fmt: skip
    return scroll(f"<table><thead><tr>{head}</tr></thead>{table_body(rows, numeric)}</table>",
                  ", ".join(columns[:2]))


def table_body(rows: Iterable[Sequence[object]], numeric: Sequence[int] = ()) -> str:
    """``<tbody>`` of escaped cells (``Markup`` cells are already HTML)."""
    body = "".join(
        "<tr>" + "".join(f'<td class="{"num" if i in numeric else ""}">{cell_html(c)}</td>'
                         for i, c in enumerate(row)) + "</tr>"
        for row in rows
    )  # fmt: skip
    return f"<tbody>{body}</tbody>"


def scroll(html: str, label: str) -> str:
    """A wide table in a box that scrolls sideways (and takes focus, for the keyboard)."""
    return (f'<div class="scroll" tabindex="0" role="region" aria-label="{esc(label)} table">'
            f"{html}</div>")


class Markup(str):
    """Text that is already HTML (built here from escaped parts)."""


def cell_html(cell: object) -> str:
    return str(cell) if isinstance(cell, Markup) else words("" if cell is None else cell)


_JOINED = re.compile(r"\S*[-‐/]\S*")


def words(text: object) -> str:
    """``text`` escaped, each word with a hyphen or slash kept whole on its line
    (``2024-05-01``, ``gpu-node-03``): lines break between words only."""
    return _JOINED.sub(lambda m: f'<span class="nw">{m.group(0)}</span>', esc(text))


def link(href: str, text: object, **params: object) -> Markup:
    """``<a>`` to ``href`` with query ``params`` (both escaped)."""
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")}, doseq=True)
    url = href + (f"?{query}" if query else "")
    return Markup(f'<a href="{esc(url)}">{words(text)}</a>')

"""A report as one self-contained HTML file: inline CSS, charts as inline SVG, no scripts.

The file works offline and prints cleanly: nothing is fetched (no CDN, font,
script or image), every text from the report is escaped, and each figure is a
``<figure class="greenml-figure" data-kind="…">`` holding one ``<svg role="img">``
with a title and a description.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from greenml.__version__ import __version__
from greenml.report.bars import bar_chart
from greenml.report.line import line_chart
from greenml.report.pie import pie_chart
from greenml.report.svg import esc, no_data

if TYPE_CHECKING:
    from greenml.report.model import Figure, Report, Section, Table

_SHORT = 24
"""Longer cells are prose, even when they start with a number (left-aligned, wrapped)."""
_NUMERIC = re.compile(r"^[-+−±~≈<>≤≥$€£]?\s*\d[\d,.]*(?:[eE][-+]?\d+)?(?:\s|%|$)")
_STYLE = """
:root { color-scheme: light; --ink: #222; --muted: #666; --rule: #d9d9d9; --accent: #2f6b4f; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; }
.page { max-width: 60rem; margin: 0 auto; padding: 2rem 1.5rem 3rem; }
header { border-bottom: 3px solid var(--accent); padding-bottom: .75rem; margin-bottom: 1.5rem; }
.kind { margin: 0; color: var(--accent); font-size: .8rem; font-weight: 600;
  letter-spacing: .08em; text-transform: uppercase; }
h1 { margin: .2rem 0 .3rem; font-size: 1.75rem; line-height: 1.25; }
h2 { margin: 2.2rem 0 .6rem; font-size: 1.25rem; border-bottom: 1px solid var(--rule);
  padding-bottom: .25rem; }
.meta { margin: 0; color: var(--muted); font-size: .85rem; }
nav.toc ol { margin: 0 0 1rem; padding-left: 1.2rem; color: var(--muted); font-size: .9rem; }
nav.toc a { color: inherit; }
p { margin: .5rem 0; max-width: 48rem; overflow-wrap: anywhere; }
figure { margin: 1.2rem 0 1.6rem; }
figcaption { font-weight: 600; margin-bottom: .4rem; }
.greenml-figure svg { display: block; width: 100%; height: auto; max-width: 900px; }
.greenml-table { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: .9rem;
  font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: 600; padding-bottom: .4rem; }
th, td { padding: .35rem .6rem; border-bottom: 1px solid var(--rule); text-align: left;
  vertical-align: top; overflow-wrap: anywhere; }
thead th { border-bottom: 2px solid #999; background: #f6f7f6; }
tbody tr:nth-child(even) { background: #fafafa; }
.num { text-align: right; white-space: nowrap; }
.note { color: var(--muted); font-size: .85rem; margin-top: .35rem; }
footer { margin-top: 3rem; padding-top: .75rem; border-top: 1px solid var(--rule);
  color: var(--muted); font-size: .8rem; }
footer p { margin: .2rem 0; max-width: none; }
footer code { overflow-wrap: anywhere; }
@media print {
  @page { margin: 15mm; }
  body { font-size: 10pt; }
  .page { max-width: none; padding: 0; }
  nav.toc { display: none; }
  h2 { break-after: avoid; }
  figure, tr { break-inside: avoid; }
  thead { display: table-header-group; }
  tbody tr:nth-child(even), thead th { background: none; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
"""


def render_html(report: Report) -> str:
    """The whole report as one HTML document (UTF-8 text).

    Args:
        report: The document model built by a report kind.

    Returns:
        A self-contained HTML page: inline CSS and SVG, no external resource.
    """
    counter = _Counter()
    sections = "".join(_section(s, i, counter) for i, s in enumerate(report.sections, 1))
    generated = _when(report.generated_at)
    kind = report.kind.replace("-", " ").replace("_", " ")
    head = (
        '<meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="greenml {esc(__version__)}">'
        f"<title>{esc(report.title)}</title><style>{_STYLE}</style>"
    )
    header = (
        f'<header><p class="kind">{esc(kind)}</p><h1>{esc(report.title)}</h1>'
        f'<p class="meta">Generated {esc(generated)} · {_runs_count(report.runs)}</p></header>'
    )
    body = f'<div class="page">{header}{_toc(report.sections)}<main>{sections}</main>'
    body += f"{_footer(report, generated, __version__)}</div>"
    return f'<!DOCTYPE html>\n<html lang="en"><head>{head}</head><body>{body}</body></html>\n'


class _Counter:
    """Numbers figures and tables across the document (ids and captions)."""

    def __init__(self) -> None:
        self.figures = 0
        self.tables = 0


def _section(section: Section, index: int, counter: _Counter) -> str:
    parts = [f'<h2 id="section-{index}">{esc(section.heading)}</h2>']
    parts += [f"<p>{esc(p)}</p>" for p in section.paragraphs]
    parts += [_table(t, counter) for t in section.tables]
    parts += [_figure(f, counter) for f in section.figures]
    return f'<section aria-labelledby="section-{index}">{"".join(parts)}</section>'


def _table(table: Table, counter: _Counter) -> str:
    counter.tables += 1
    body = [[str(c) for c in row] for row in table.rows]  # cells are text; tolerate numbers
    width = max([len(table.columns), *(len(r) for r in body)], default=0)
    columns = [*table.columns, *[""] * (width - len(table.columns))]
    numeric = [_is_numeric_column([r[i] if i < len(r) else "" for r in body])
               for i in range(width)]  # fmt: skip
    caption = f"<caption>{esc(table.title)}</caption>" if table.title else ""
    head = "".join(
        f'<th scope="col"{_num_class(numeric[i])}>{esc(c)}</th>' for i, c in enumerate(columns)
    )
    rows = []
    for row in body:
        cells = [*row, *[""] * (width - len(row))]
        rows.append("<tr>" + "".join(
            f"<td{_num_class(numeric[i])}>{esc(c)}</td>" for i, c in enumerate(cells)
        ) + "</tr>")  # fmt: skip
    note = f'<p class="note">{esc(table.note)}</p>' if table.note else ""
    return (
        f'<figure class="greenml-table" id="table-{counter.tables}"><table>{caption}'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{note}</figure>"
    )


def _figure(figure: Figure, counter: _Counter) -> str:
    counter.figures += 1
    ident = f"figure-{counter.figures}"
    if figure.kind == "line":
        svg = line_chart(figure, ident)
    elif figure.kind in ("bars", "stacked-bars"):
        svg = bar_chart(figure, ident, stacked=figure.kind == "stacked-bars")
    elif figure.kind == "pie":
        svg = pie_chart(figure, ident)
    else:
        svg = no_data(ident, figure.title, f"Figure kind {figure.kind!r} cannot be drawn")
    caption = f"Figure {counter.figures}" + (f". {figure.title}" if figure.title else "")
    return (
        f'<figure class="greenml-figure" data-kind="{esc(figure.kind)}" id="{ident}">'
        f"<figcaption>{esc(caption)}</figcaption>{svg}</figure>"
    )


def _toc(sections: list[Section]) -> str:
    if len(sections) < 4:
        return ""
    items = "".join(
        f'<li><a href="#section-{i}">{esc(s.heading)}</a></li>' for i, s in enumerate(sections, 1)
    )
    return f'<nav class="toc" aria-label="Contents"><ol>{items}</ol></nav>'


def _footer(report: Report, generated: str, version: str) -> str:
    runs = ", ".join(f"<code>{esc(r)}</code>" for r in report.runs) or "none"
    return (
        f"<footer><p>Generated {esc(generated)} by greenml {esc(version)} "
        f"(report kind: {esc(report.kind)}).</p>"
        f"<p>Runs covered ({len(report.runs)}): {runs}</p></footer>"
    )


def _is_numeric_column(cells: list[str]) -> bool:
    """Whether every filled cell is a short number (with its unit): those align right."""
    filled = [c.strip() for c in cells if c.strip() not in ("", "-", "—", "n/a")]
    return bool(filled) and all(_NUMERIC.match(c) and len(c) <= _SHORT for c in filled)


def _num_class(numeric: bool) -> str:
    return ' class="num"' if numeric else ""


def _runs_count(runs: list[str]) -> str:
    return "1 run" if len(runs) == 1 else f"{len(runs)} runs"


def _when(iso: str) -> str:
    """ISO 8601 → ``2024-05-01 12:00:00 UTC``; text that is not a time is shown as given."""
    try:
        moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")

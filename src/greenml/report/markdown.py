"""Render a :class:`~greenml.report.model.Report` as GitHub Markdown or as JSON.

Text is plain in the model, so everything a person wrote (run names, tags,
sources) is escaped here: Markdown punctuation in paragraphs, ``|`` in table
cells. Figures become a small table of their data (pie and bars) or a one-line
summary (lines, which have too many points for a table).
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timezone
from typing import Any

from greenml.quantities import sig
from greenml.report.model import Figure, Report, Section, Table

_SPECIAL = re.compile(r"([\\`*_\[\]<>])")
_LINE_START = re.compile(r"^(\s*)([#>+-]|\d+\.)(\s)", re.MULTILINE)


def escape(text: str) -> str:
    """Plain text → Markdown that shows the same text."""
    text = _SPECIAL.sub(r"\\\1", str(text))
    return _LINE_START.sub(lambda m: f"{m.group(1)}\\{m.group(2)}{m.group(3)}", text)


def _cell(text: str) -> str:
    return escape(" ".join(str(text).split())).replace("|", "\\|")


def render_table(table: Table) -> str:
    """A GitHub table, with its title above and its note below."""
    lines = []
    if table.title:
        lines += [f"**{escape(table.title)}**", ""]
    width = len(table.columns)
    lines.append("| " + " | ".join(_cell(c) for c in table.columns) + " |")
    lines.append("|" + "---|" * width)
    for row in table.rows:
        cells = [_cell(c) for c in row] + [""] * (width - len(row))
        lines.append("| " + " | ".join(cells[:width]) + " |")
    if table.note:
        lines += ["", f"*{escape(table.note)}*"]
    return "\n".join(lines)


def figure_table(figure: Figure) -> Table | None:
    """Pie and bar figures as a table (x labels × series); ``None`` for lines."""
    if figure.kind == "line" or not figure.series:
        return None
    labels: list[str] = []
    for series in figure.series:
        labels += [str(x) for x in series.x if str(x) not in labels]
    columns = [figure.x_label or "", *(s.name for s in figure.series)]
    rows = []
    for label in labels:
        row = [label]
        for series in figure.series:
            keys = [str(x) for x in series.x]
            values = dict(zip(keys, series.y, strict=False))
            errors = dict(zip(keys, figure.error.get(series.name, []), strict=False))
            value = values.get(label)
            cell = "" if value is None else sig(value, 3)
            if value is not None and errors.get(label):
                cell += f" ± {sig(errors[label], 2)}"
            row.append(cell)
        rows.append(row)
    return Table(columns=columns, rows=rows, title=f"Figure: {figure.title}", note=figure.y_label)


def figure_summary(figure: Figure) -> str:
    """One line per figure: what it shows, and the range of each series."""
    parts = []
    for series in figure.series:
        ys = [y for y in series.y if math.isfinite(y)]
        if not ys:
            parts.append(f"{series.name}: no data")
            continue
        span = ""
        xs = series.x
        if xs and figure.kind == "line" and isinstance(xs[0], (int, float)):
            seconds = float(xs[-1]) - float(xs[0])  # type: ignore[arg-type]
            start = datetime.fromtimestamp(float(xs[0]), tz=timezone.utc)  # type: ignore[arg-type]
            span = f" over {sig(seconds, 2)} s from {start:%Y-%m-%d %H:%M:%S} UTC"
        parts.append(
            f"{series.name}: {len(ys)} points{span}, {sig(min(ys), 2)} to {sig(max(ys), 2)}"
            f" (mean {sig(sum(ys) / len(ys), 2)})"
        )
    unit = f" [{figure.y_label}]" if figure.y_label else ""
    return f"*Figure: {escape(figure.title)}{escape(unit)}* — " + escape("; ".join(parts))


def render_section(section: Section) -> str:
    """A section: heading, paragraphs, tables, then figures."""
    blocks = [f"## {escape(section.heading)}"]
    blocks += [escape(p) for p in section.paragraphs]
    blocks += [render_table(t) for t in section.tables]
    for figure in section.figures:
        table = figure_table(figure)
        blocks.append(render_table(table) if table is not None else figure_summary(figure))
    return "\n\n".join(blocks)


def render_markdown(report: Report) -> str:
    """The whole report as GitHub-flavoured Markdown."""
    head = [
        f"# {escape(report.title)}",
        escape(f"Generated {report.generated_at} by greenml from {_runs_text(report.runs)}."),
    ]
    return "\n\n".join(head + [render_section(s) for s in report.sections]) + "\n"


def render_json(report: Report) -> str:
    """The whole report (sections and data) as JSON; non-finite numbers become ``null``."""
    return json.dumps(_finite(report.to_dict()), indent=2, ensure_ascii=False, allow_nan=False)


def _runs_text(runs: list[str]) -> str:
    if len(runs) == 1:
        return f"run {runs[0]}"
    shown = ", ".join(runs[:10])
    more = f" and {len(runs) - 10} more" if len(runs) > 10 else ""
    return f"{len(runs)} runs ({shown}{more})"


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value

"""Pie figures as inline SVG: one pie per series, each slice labelled with its share."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from greenml.report.svg import (
    INK,
    MUTED,
    PALETTE,
    WIDTH,
    color,
    el,
    no_data,
    shorten,
    svg_root,
    text,
    tip,
)
from greenml.report.ticks import format_error, format_value

if TYPE_CHECKING:
    from greenml.report.model import Figure, Series

RADIUS = 100.0
ROW_HEIGHT = 2 * RADIUS + 40
MOST_SLICES = len(PALETTE)
"""Beyond this many slices (one per colour), the smallest are shown as one "other" slice."""


def pie_chart(figure: Figure, ident: str) -> str:
    """A pie per series with a legend of name, value and share."""
    rows, notes = [], []
    y = 0.0
    for series in figure.series:
        slices, left_out = _slices(series, figure.error.get(series.name, []))
        if left_out:
            notes.append(f"{series.name}: {left_out} negative or missing values not shown")
        if not slices:
            continue
        heading = series.name if len(figure.series) > 1 else ""
        rows.append(_pie(slices, y, heading, figure.y_label))
        y += ROW_HEIGHT + (20 if heading else 0)
    if not rows:
        return no_data(ident, figure.title)
    if notes:
        rows.append(text(0.0, y + 4, "; ".join(notes), fill=MUTED, class_="note"))
        y += 16
    desc = "Pie chart. " + " ".join(_describe(s) for s in figure.series)
    return svg_root(ident, figure.title, desc, y + 4, "".join(rows))


Slice = tuple[str, float, float]
"""(label, value, ± half-width or 0)."""


def _slices(series: Series, errors: list[float]) -> tuple[list[Slice], int]:
    """The slices to draw, and how many values were left out (negative or not finite)."""
    slices: list[Slice] = []
    left_out = 0
    for i, (x, y) in enumerate(zip(series.x, series.y, strict=False)):
        error = errors[i] if i < len(errors) and math.isfinite(errors[i]) else 0.0
        if math.isfinite(y) and y >= 0:
            slices.append((str(x), float(y), abs(error)))
        else:
            left_out += 1
    if len(slices) > MOST_SLICES:
        slices.sort(key=lambda s: -s[1])
        rest = slices[MOST_SLICES - 1 :]
        other = (f"other ({len(rest)})", sum(s[1] for s in rest), 0.0)
        slices = [*slices[: MOST_SLICES - 1], other]
    return (slices if sum(s[1] for s in slices) > 0 else []), left_out


def _pie(slices: list[Slice], top: float, heading: str, unit: str) -> str:
    total = sum(s[1] for s in slices)
    parts = []
    if heading:
        parts.append(text(0.0, top + 14, shorten(heading, 80), fill=INK, font_weight="600"))
        top += 20
    cx, cy = RADIUS + 20, top + RADIUS + 20
    angle = -math.pi / 2  # start at twelve o'clock, go clockwise
    legend_x, legend_y = 2 * RADIUS + 70, top + 30
    if unit:
        parts.append(text(legend_x, legend_y - 14, shorten(unit, 60), fill=MUTED))
    for i, (label, value, error) in enumerate(slices):
        share = value / total
        amount = format_value(value) + (f" ± {format_error(error)}" if error else "")
        about = f"{label}: {amount} ({share:.1%})"
        parts.append(_slice(cx, cy, angle, share, color(i), about))
        middle = angle + share * math.pi
        if share >= 0.06:
            lx, ly = cx + 0.62 * RADIUS * math.cos(middle), cy + 0.62 * RADIUS * math.sin(middle)
            parts.append(text(lx, ly + 4, f"{share:.0%}", anchor="middle", fill="#ffffff",
                              font_weight="600", class_="share"))  # fmt: skip
        angle += share * 2 * math.pi
        row_y = legend_y + i * 20
        parts.append(el("rect", {"x": legend_x, "y": row_y - 10, "width": 12.0, "height": 12.0,
                                 "fill": color(i)}))  # fmt: skip
        parts.append(text(legend_x + 20, row_y, shorten(label, 34), fill=INK))
        figures = f"{amount}  ({share:.1%})"
        parts.append(text(WIDTH - 10, row_y, figures, anchor="end", fill=INK,
                          class_="value"))  # fmt: skip
    return el("g", {"class": "pie"}, "".join(parts))


def _slice(cx: float, cy: float, start: float, share: float, fill: str, about: str) -> str:
    if share >= 0.9999:
        return el("circle", {"cx": cx, "cy": cy, "r": RADIUS, "fill": fill}, tip(about))
    end = start + share * 2 * math.pi
    x0, y0 = cx + RADIUS * math.cos(start), cy + RADIUS * math.sin(start)
    x1, y1 = cx + RADIUS * math.cos(end), cy + RADIUS * math.sin(end)
    large = 1 if share > 0.5 else 0
    d = (f"M{cx:.1f},{cy:.1f} L{x0:.1f},{y0:.1f} "
         f"A{RADIUS:.1f},{RADIUS:.1f} 0 {large} 1 {x1:.1f},{y1:.1f} Z")  # fmt: skip
    return el("path", {"d": d, "fill": fill, "stroke": "#ffffff", "stroke-width": 1.5}, tip(about))


def _describe(series: Series) -> str:
    slices, _ = _slices(series, [])
    total = sum(s[1] for s in slices)
    shares = ", ".join(f"{s[0]} {s[1] / total:.0%}" for s in slices) if total else ""
    return f"{series.name}: {shares}." if shares else f"{series.name}: no data."

"""Bar figures as inline SVG: ``bars`` side by side, ``stacked-bars`` on top of each other.

Labels on x; ``Figure.error`` draws ± whiskers (at each bar's top, or at each
segment's top edge when stacked). A value that is not finite draws no bar.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from greenml.report.axes import Frame, plot_frame, ranges_text, x_title
from greenml.report.svg import (
    INK,
    WIDTH,
    color,
    el,
    no_data,
    shorten,
    svg_root,
    text,
    text_width,
    tip,
)
from greenml.report.ticks import format_error, format_value

if TYPE_CHECKING:
    from greenml.report.model import Figure, Series


def bar_chart(figure: Figure, ident: str, stacked: bool = False) -> str:
    """Bars per label: side by side (grouped) or stacked, with ± error bars when given."""
    labels = _labels(figure.series)
    table = [_by_label(s, figure.error.get(s.name)) for s in figure.series]
    if not labels or not any(table):
        return no_data(ident, figure.title)
    lows, highs = [0.0], [0.0]
    for label in labels:
        cells = [row[label] for row in table if label in row]
        if stacked:
            lows.append(sum(min(v, 0.0) for v, _ in cells))
            highs.append(sum(max(v, 0.0) for v, _ in cells) + max((e for _, e in cells), default=0))
        else:
            lows += [v - e for v, e in cells]
            highs += [v + e for v, e in cells]
    group_w = (WIDTH - 80) / len(labels)
    longest = max(text_width(shorten(label, 28)) for label in labels)
    rotate = longest > group_w - 6
    foot = 30.0 + (longest * 0.57 if rotate else 0.0)  # sin 35°
    reach = text_width(shorten(labels[0], 28)) * 0.82 - group_w / 2 + 4 if rotate else 0.0
    names = [s.name for s in figure.series] if len(figure.series) > 1 else []
    frame, head, foot_y = plot_frame(figure, names, "box", min(lows), max(highs), foot, reach)
    group_w = frame.width / len(labels)
    per_group = 1 if stacked else max(len(figure.series), 1)
    bar_w = min(56.0, group_w * (0.6 if stacked else 0.78) / per_group)
    show_values = len(labels) * per_group <= 16 and bar_w >= 22
    parts, every = [head], math.ceil(20 / group_w) if rotate else 1  # rotated text: 20 px apart
    on_top: list[str] = []  # whiskers and value labels, drawn over every bar
    for g, label in enumerate(labels):
        left = frame.left + g * group_w + (group_w - bar_w * per_group) / 2
        base = {"pos": 0.0, "neg": 0.0}
        for i, row in enumerate(table):
            if label not in row:
                continue
            value, error = row[label]
            x = left if stacked else left + i * bar_w
            if stacked:
                key = "pos" if value >= 0 else "neg"
                low, high = sorted((base[key], base[key] + value))
                base[key] += value
                top_value = base[key]
            else:
                low, high, top_value = min(value, 0.0), max(value, 0.0), value
            name = figure.series[i].name
            about = f"{name} — {label}: {format_value(value)}" + (
                f" ± {format_error(error)}" if error else "")  # fmt: skip
            parts.append(el("rect", {"x": x + 1, "y": frame.y(high), "width": max(bar_w - 2, 1),
                                     "height": max(frame.y(low) - frame.y(high), 0.5),
                                     "fill": color(i)}, tip(about)))  # fmt: skip
            if error:
                on_top.append(_whisker(x + bar_w / 2, top_value, error, bar_w, frame))
            if show_values and not stacked:
                on_top.append(_value_label(x + bar_w / 2, value, error, frame))
        errors = [row[label][1] for row in table if label in row]
        if show_values and stacked and errors:
            total = base["pos"] + base["neg"]
            on_top.append(_value_label(left + bar_w / 2, base["pos"] or total, max(errors), frame,
                                      shown=total))  # fmt: skip
        if g % every == 0:
            parts.append(_x_label(left + bar_w * per_group / 2, frame.bottom, label, rotate))
    parts += [*on_top, x_title(frame, figure.x_label, foot_y)]
    kind = "Stacked bar chart" if stacked else "Bar chart"
    desc = f"{kind} over {len(labels)} labels. " + ranges_text(figure.series, figure.y_label)
    return svg_root(ident, figure.title, desc, foot_y + 8, "".join(parts))


def _labels(series: list[Series]) -> list[str]:
    seen: dict[str, None] = {}
    for s in series:
        seen.update((_label(x), None) for x in s.x)
    return list(seen)


def _label(x: object) -> str:
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x)


def _by_label(series: Series, errors: list[float] | None) -> dict[str, tuple[float, float]]:
    errs = list(errors or [])
    cells = {}
    for i, (x, y) in enumerate(zip(series.x, series.y, strict=False)):
        error = errs[i] if i < len(errs) and math.isfinite(errs[i]) else 0.0
        if math.isfinite(y):
            cells[_label(x)] = (float(y), abs(float(error)))
    return cells


def _whisker(x: float, value: float, error: float, bar_w: float, frame: Frame) -> str:
    cap = min(bar_w * 0.25, 6.0)
    y_low, y_high = frame.y(value - error), frame.y(value + error)
    d = (f"M{x:.1f},{y_low:.1f} V{y_high:.1f} M{x - cap:.1f},{y_low:.1f} H{x + cap:.1f} "
         f"M{x - cap:.1f},{y_high:.1f} H{x + cap:.1f}")  # fmt: skip
    return el("path", {"d": d, "stroke": INK, "stroke-width": 1.2, "fill": "none",
                       "class": "error-bar"})  # fmt: skip


def _value_label(
    x: float, value: float, error: float, frame: Frame, shown: float | None = None
) -> str:
    above = value >= 0
    y = frame.y(value + error if above else value - error) + (-5 if above else 14)
    return text(x, y, format_value(value if shown is None else shown), anchor="middle",
                fill=INK, font_size="11", class_="value")  # fmt: skip


def _x_label(x: float, y: float, label: str, rotate: bool) -> str:
    short = shorten(label, 28)
    if not rotate:
        return text(x, y + 16, short, anchor="middle", fill=INK) if short else ""
    return text(x, y + 12, short, anchor="end", fill=INK,
                transform=f"rotate(-35 {x:.1f} {y + 12:.1f})")  # fmt: skip

"""Line figures as inline SVG: series over UTC time (Unix seconds) or over a numeric x.

A value that is not finite leaves a gap in its line, never a made-up point.
Long series are thinned to the lowest and highest point of each pixel column,
so the drawn shape is the data's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from greenml.report.axes import Frame, plot_frame, ranges_text, unit_of, x_title
from greenml.report.svg import (
    GRID,
    MUTED,
    WIDTH,
    color,
    dash,
    el,
    multiline,
    no_data,
    svg_root,
    text_width,
    tip,
)
from greenml.report.ticks import format_value, time_span_text, time_ticks, value_ticks

if TYPE_CHECKING:
    from greenml.report.model import Figure, Series

Point = tuple[float, float]
MARKERS_UP_TO = 60
"""Series with at most this many points get a marker (with a tooltip) on each."""
DECIMATE_ABOVE = 1500
"""Longer series are reduced to the min and max of each pixel column."""
TIME_AXIS_FROM_S = 1e8
"""x values from here on (1973) are Unix times; smaller ones are plain numbers."""


def line_chart(figure: Figure, ident: str) -> str:
    """Each series as a line over time (UTC) or over a numeric x."""
    segments = {i: _segments(s) for i, s in enumerate(figure.series)}
    points = [p for segs in segments.values() for seg in segs for p in seg]
    if not points:
        return no_data(ident, figure.title)
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    timed = min(xs) >= TIME_AXIS_FROM_S
    x0, x1 = min(xs), max(xs)
    if x1 <= x0:
        x0, x1 = x0 - (1800 if timed else 1), x1 + (1800 if timed else 1)
    if timed:
        xticks, xlabels = time_ticks(x0, x1)
    else:
        xticks = value_ticks(x0, x1)
        x0, x1 = xticks[0], xticks[-1]
        xlabels = [format_value(v, xticks[1] - xticks[0]) for v in xticks]
    names = [s.name for s in figure.series]
    frame, head, foot_y = plot_frame(figure, names, "line", min(ys), max(ys), 36.0)

    def sx(x: float) -> float:
        return frame.left + (x - x0) / (x1 - x0) * frame.width

    parts = [head]
    for t, label in zip(xticks, xlabels, strict=True):
        x = sx(t)
        parts.append(el("line", {"x1": x, "y1": frame.top, "x2": x, "y2": frame.bottom,
                                 "stroke": GRID, "stroke-width": 1.0}))  # fmt: skip
        half = max(text_width(line) for line in label.split("\n")) / 2
        anchor = "end" if x + half > WIDTH else "start" if x - half < 0 else "middle"
        parts.append(multiline(x, frame.bottom + 16, label, fill=MUTED, anchor=anchor))
    x_name = figure.x_label or ("Time" if timed else "")
    if timed and "UTC" not in x_name:
        x_name = f"{x_name} (UTC)"
    parts.append(x_title(frame, x_name, foot_y))
    when = _time_text if timed else format_value
    for i, series in enumerate(figure.series):
        parts.append(_series_line(series, segments[i], i, frame, sx, when, figure.y_label))
    span = time_span_text(x0, x1) if timed else f"x from {format_value(x0)} to {format_value(x1)}"
    desc = f"Line chart, {span}. " + ranges_text(figure.series, figure.y_label)
    return svg_root(ident, figure.title, desc, foot_y + 8, "".join(parts))


def _series_line(
    series: Series,
    segments: list[list[Point]],
    index: int,
    frame: Frame,
    sx: Callable[[float], float],
    when: Callable[[float], str],
    unit: str,
) -> str:
    count = sum(len(seg) for seg in segments)
    path = []
    for seg in segments:
        drawn = _decimate(seg, frame.width) if count > DECIMATE_ABOVE else seg
        path.append("M" + " L".join(f"{sx(x):.1f},{frame.y(y):.1f}" for x, y in drawn))
    ys = [y for seg in segments for _, y in seg]
    about = series.name + (f": {format_value(min(ys))} to {format_value(max(ys))}" if ys else "")
    attrs = {"d": " ".join(path), "fill": "none", "stroke": color(index), "stroke-width": 2.0,
             "stroke-linejoin": "round", "stroke-dasharray": dash(index) or "none"}  # fmt: skip
    parts = [el("path", attrs, tip(about))] if ys else []
    if 0 < count <= MARKERS_UP_TO:
        for seg in segments:
            for x, y in seg:
                note = f"{series.name} — {when(x)}: {format_value(y)} {unit_of(unit)}".rstrip()
                parts.append(el("circle", {"cx": sx(x), "cy": frame.y(y), "r": 3.0,
                                           "fill": color(index)}, tip(note)))  # fmt: skip
    return el("g", {"class": "series", "data-series": series.name}, "".join(parts))


def _segments(series: Series) -> list[list[Point]]:
    """Runs of finite points sorted by x; a missing value splits the line."""
    pairs = []
    xs: list[object] = list(series.x)
    for x, y in zip(xs, series.y, strict=False):
        try:
            pairs.append((float(x), float(y)))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            continue
    pairs.sort(key=lambda p: p[0])
    segments: list[list[Point]] = [[]]
    for x, y in pairs:
        if math.isfinite(x) and math.isfinite(y):
            segments[-1].append((x, y))
        elif segments[-1]:
            segments.append([])
    return [seg for seg in segments if seg]


def _decimate(points: list[Point], columns: float) -> list[Point]:
    """Keep the lowest and highest point of each pixel column, in order."""
    x0, x1 = points[0][0], points[-1][0]
    width = (x1 - x0) / max(columns, 1) or 1.0
    kept: list[Point] = []
    bucket: list[Point] = []
    for p in [*points, (math.inf, 0.0)]:
        column = math.inf if math.isinf(p[0]) else (p[0] - x0) // width
        if bucket and column != (bucket[0][0] - x0) // width:
            low, high = min(bucket, key=lambda q: q[1]), max(bucket, key=lambda q: q[1])
            kept.extend(sorted({low, high}))
            bucket = []
        bucket.append(p)
    return kept


def _time_text(time_s: float) -> str:
    return datetime.fromtimestamp(time_s, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")

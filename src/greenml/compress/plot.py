"""The accuracy-vs-energy plot of a compression run, as a standalone SVG file.

One point per measured variant (energy per 1,000 inferences across, accuracy
up), a horizontal bar for the round-to-round spread of its energy, the Pareto
front as a line, the accuracy budget as a dashed line and a ring round the
recommended variant. Built from greenml's report SVG helpers; no plotting library.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from greenml.compress.result import CompressionResult
from greenml.compress.variants import Variant
from greenml.errors import ConfigError
from greenml.report.axes import Frame, y_axis
from greenml.report.svg import (
    GRID,
    INK,
    MUTED,
    TEXT_PX,
    WIDTH,
    color,
    el,
    no_data,
    svg_root,
    text,
    text_width,
    tip,
)
from greenml.report.ticks import format_value, value_ticks

Box = tuple[float, float, float, float]  # left, top, right, bottom
PLOT_HEIGHT = 300.0
LEFT, TOP, RIGHT = 64.0, 28.0, 24.0
LOG_FROM_RATIO = 20.0
"""Energies spanning more than this factor get a logarithmic axis."""
TITLE = "Accuracy vs energy per 1,000 inferences"


def pareto_svg(result: CompressionResult) -> str:
    """The plot as a standalone SVG document."""
    points = [
        v for v in result.variants
        if v.ok and v.accuracy_pct is not None and v.energy_per_1k_j is not None
    ]  # fmt: skip
    if not points:
        return _standalone(no_data("compress-pareto", TITLE, "No variant was measured"))
    energies = [_spread(v) for v in points]
    low = min(lo for lo, _ in energies)
    high = max(hi for _, hi in energies)
    log = low > 0 and high / low > LOG_FROM_RATIO
    accuracies = [v.accuracy_pct or 0.0 for v in points]
    budget = _budget_line(result)
    y_ticks = value_ticks(min([*accuracies, *([budget] if budget is not None else [])]),
                          max(accuracies))  # fmt: skip
    step = y_ticks[1] - y_ticks[0]
    frame = Frame(LEFT, TOP, WIDTH - LEFT - RIGHT, PLOT_HEIGHT, y_ticks[0], y_ticks[-1])
    x_ticks = _log_ticks(low, high) if log else value_ticks(min(low, 0.0), high)
    x0, x1 = x_ticks[0], x_ticks[-1]

    def sx(value: float) -> float:
        if log:
            a, b, v = math.log10(x0), math.log10(x1), math.log10(max(value, x0))
            return frame.left + (v - a) / (b - a) * frame.width
        return frame.left + (value - x0) / ((x1 - x0) or 1.0) * frame.width

    parts = [y_axis(frame, y_ticks, [format_value(t, step) for t in y_ticks], "Accuracy (%)")]
    x_step = 0.0 if log else x_ticks[1] - x_ticks[0]  # one number of decimals on a linear axis
    for t in x_ticks:
        x = sx(t)
        parts.append(el("line", {"x1": x, "y1": frame.top, "x2": x, "y2": frame.bottom,
                                 "stroke": GRID, "stroke-width": 1.0}))  # fmt: skip
        label = format_value(t, x_step)
        parts.append(text(x, frame.bottom + 16, label, anchor="middle", fill=MUTED))
    axis = "Energy per 1,000 inferences (J" + (", log scale)" if log else ")")
    parts.append(text(frame.left + frame.width / 2, frame.bottom + 40, axis, anchor="middle",
                      fill=INK, class_="x-title"))  # fmt: skip
    if budget is not None:
        y = frame.y(budget)
        label = f"budget: baseline − {result.max_accuracy_drop_pp:g} pp"
        parts.append(el("line", {"x1": frame.left, "y1": y, "x2": frame.left + frame.width,
                                 "y2": y, "stroke": MUTED, "stroke-dasharray": "5 4",
                                 "class": "budget"}))  # fmt: skip
        parts.append(text(frame.left + frame.width - 4, y - 5, label, anchor="end", fill=MUTED))
    front = sorted((v for v in points if v.pareto), key=lambda v: v.energy_per_1k_j or 0.0)
    if len(front) > 1:
        path = " L".join(f"{sx(v.energy_per_1k_j or 0.0):.1f},{frame.y(v.accuracy_pct or 0.0):.1f}"
                         for v in front)  # fmt: skip
        parts.append(el("path", {"d": "M" + path, "fill": "none", "stroke": color(0),
                                 "stroke-width": 1.5, "stroke-dasharray": "2 3",
                                 "class": "pareto-front"}))  # fmt: skip
    placed: list[Box] = []
    for i in sorted(range(len(points)), key=lambda i: points[i].energy_per_1k_j or 0.0):
        v = points[i]
        parts.append(_point(v, i, frame, sx, energies[i], result.recommendation.variant))
        x, y = sx(v.energy_per_1k_j or 0.0), frame.y(v.accuracy_pct or 0.0)
        lx, ly = _label_at(x, y, v.name, placed)
        parts.append(text(lx, ly, v.name, fill=INK, class_="label"))
    desc = (
        f"Scatter of {len(points)} variants: accuracy in percent against energy per 1,000 "
        f"inferences in joules. Recommended: {result.recommendation.variant or 'none'}."
    )
    height = frame.bottom + 52
    return _standalone(svg_root("compress-pareto", TITLE, desc, height, "".join(parts)))


def write_pareto_svg(result: CompressionResult, path: str | Path) -> Path:
    """Write the plot; returns the path.

    Raises:
        ConfigError: The file cannot be written.
    """
    target = Path(path)
    try:
        target.write_text(pareto_svg(result), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write the plot to {target}: {exc.strerror}") from exc
    return target


def _point(v: Variant, index: int, frame: Frame, sx: Callable[[float], float],
           spread: tuple[float, float], recommended: str | None) -> str:  # fmt: skip
    energy, accuracy = v.energy_per_1k_j or 0.0, v.accuracy_pct or 0.0
    x, y = sx(energy), frame.y(accuracy)
    parts = []
    lo, hi = spread
    if hi > lo:
        parts.append(el("line", {"x1": sx(lo), "y1": y, "x2": sx(hi), "y2": y,
                                 "stroke": color(index), "stroke-width": 1.5,
                                 "class": "error"}))  # fmt: skip
    if v.name == recommended:
        parts.append(el("circle", {"cx": x, "cy": y, "r": 9.0, "fill": "none",
                                   "stroke": INK, "stroke-width": 1.5,
                                   "class": "recommended"}))  # fmt: skip
    note = (
        f"{v.name}: accuracy {accuracy:.2f} %, {format_value(energy)} J per 1,000 inferences"
        f" ({v.energy_method})" + (" — on the Pareto front" if v.pareto else "")
    )
    parts.append(el("circle", {"cx": x, "cy": y, "r": 5.0, "fill": color(index),
                               "class": "point", "data-variant": v.name}, tip(note)))  # fmt: skip
    return el("g", {"class": "variant"}, "".join(parts))


def _label_at(x: float, y: float, name: str, placed: list[Box]) -> tuple[float, float]:
    """Where a point's name goes: the first spot near it that no earlier name covers."""
    width = text_width(name)
    spots = [(8.0, -8.0), (8.0, 16.0), (-8.0 - width, -8.0), (-8.0 - width, 16.0),
             (8.0, -22.0), (8.0, 30.0)]  # fmt: skip
    for dx, dy in spots:
        box = (x + dx, y + dy - TEXT_PX, x + dx + width, y + dy + 2)
        inside = box[0] >= 0 and box[2] <= WIDTH
        if inside and not any(_overlap(box, other) for other in placed):
            placed.append(box)
            return x + dx, y + dy
    placed.append((x + 8, y - 8 - TEXT_PX, x + 8 + width, y - 6))
    return x + 8, y - 8


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _spread(v: Variant) -> tuple[float, float]:
    """Energy ± one round-to-round standard error."""
    energy = v.energy_per_1k_j or 0.0
    rel = v.energy_spread_rel or 0.0
    return max(energy * (1 - rel), energy * 0.01), energy * (1 + rel)


def _budget_line(result: CompressionResult) -> float | None:
    try:
        base = result.baseline
    except KeyError:
        return None
    if base.accuracy_pct is None:
        return None
    return base.accuracy_pct - result.max_accuracy_drop_pp


def _log_ticks(low: float, high: float) -> list[float]:
    """1-2-5 ticks per decade covering [low, high] (the ends rounded outwards)."""
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    steps = (1.0,) if last - first > 3 else (1.0, 2.0, 5.0)
    ticks = [m * 10.0**k for k in range(first, last + 1) for m in steps]
    below = [t for t in ticks if t <= low]
    above = [t for t in ticks if t >= high]
    start, end = (below[-1] if below else ticks[0]), (above[0] if above else ticks[-1])
    return [t for t in ticks if start <= t <= end]


def _standalone(svg: str) -> str:
    """An inline chart made a file of its own: the XML declaration and the SVG namespace."""
    svg = svg.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + svg + "\n"

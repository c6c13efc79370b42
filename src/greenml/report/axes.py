"""The plot area of x/y charts: its value scale, y axis with grid, x axis title, legend slot."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from greenml.report.svg import (
    GRID,
    INK,
    MUTED,
    WIDTH,
    el,
    legend,
    num,
    shorten,
    text,
    text_width,
)
from greenml.report.ticks import format_value, value_ticks

if TYPE_CHECKING:
    from greenml.report.model import Figure, Series

PLOT_HEIGHT = 230.0


@dataclass(frozen=True)
class Frame:
    """The plot area of an x/y chart and its value scale.

    Attributes:
        left: Left edge of the plot area.
        top: Top edge.
        width: Plot area width.
        height: Plot area height.
        y_low: Value at the bottom edge.
        y_high: Value at the top edge.
    """

    left: float
    top: float
    width: float
    height: float
    y_low: float
    y_high: float

    @property
    def bottom(self) -> float:
        return self.top + self.height

    def y(self, value: float) -> float:
        """The vertical position of a value."""
        span = self.y_high - self.y_low or 1.0
        return self.bottom - (value - self.y_low) / span * self.height


def y_axis(frame: Frame, ticks: Sequence[float], labels: Sequence[str], title: str) -> str:
    """Horizontal grid lines with their values, and the axis title (rotated, left)."""
    parts = []
    for value, label in zip(ticks, labels, strict=True):
        y = frame.y(value)
        stroke = MUTED if value == 0 else GRID
        parts.append(el("line", {"x1": frame.left, "y1": y, "x2": frame.left + frame.width,
                                 "y2": y, "stroke": stroke, "stroke-width": 1.0}))  # fmt: skip
        parts.append(text(frame.left - 6, y + 4, label, anchor="end", fill=MUTED))
    if title:
        middle = frame.top + frame.height / 2
        parts.append(text(14.0, middle, shorten(title, 60), anchor="middle", fill=INK,
                          transform=f"rotate(-90 14 {num(middle)})"))  # fmt: skip
    return el("g", {"class": "axis y-axis"}, "".join(parts))


def x_title(frame: Frame, title: str, y: float) -> str:
    """The x axis title, centred under the plot."""
    if not title:
        return ""
    middle = frame.left + frame.width / 2
    return text(middle, y, shorten(title, 90), anchor="middle", fill=INK, class_="x-title")


def plot_frame(
    figure: Figure,
    names: list[str],
    swatch: str,
    low: float,
    high: float,
    foot: float,
    min_left: float = 0.0,
) -> tuple[Frame, str, float]:
    """Legend, plot area and y axis; returns the frame, their markup, the x title's baseline.

    Args:
        figure: The figure (axis titles).
        names: Legend entries; none, no legend.
        swatch: ``line`` or ``box`` legend swatches.
        low: Lowest value to show (zero is always shown).
        high: Highest value to show.
        foot: Room under the plot for the x tick labels.
        min_left: Least room left of the plot (for slanted labels).
    """
    head, legend_h = legend(names, 4.0, swatch) if names else ("", 0.0)
    ticks = value_ticks(min(low, 0.0), max(high, 0.0))
    labels = [format_value(v, ticks[1] - ticks[0]) for v in ticks]
    left = max(34.0 + max(text_width(label) for label in labels), min_left)
    frame = Frame(left, legend_h + 10, WIDTH - left - 18, PLOT_HEIGHT, ticks[0], ticks[-1])
    head += y_axis(frame, ticks, labels, figure.y_label)
    return frame, head, frame.bottom + foot + 18


def ranges_text(series: list[Series], unit: str) -> str:
    """Each series' lowest and highest value, for a chart's description (screen readers)."""
    parts = []
    for s in series[:8]:
        ys = [y for y in s.y if math.isfinite(y)]
        if ys:
            parts.append(f"{s.name}: {format_value(min(ys))} to {format_value(max(ys))}")
    more = f"; and {len(series) - 8} more series" if len(series) > 8 else ""
    return (f"{unit}. " if unit else "") + "; ".join(parts) + more + "."


def unit_of(label: str) -> str:
    """``Intensity (g/kWh)`` → ``g/kWh``; ``kWh`` → ``kWh``; ``Energy used`` → nothing."""
    if label.endswith(")") and "(" in label:
        return label[label.rindex("(") + 1 : -1]
    return label if " " not in label.strip() else ""

"""SVG building blocks for the HTML report's charts: escaped elements, text, legend, colours.

Everything that comes from a report (names, labels, titles) passes through
:func:`esc` or an attribute of :func:`el`, which escape it. The plot area is in
:mod:`~greenml.report.axes`; the charts in :mod:`~greenml.report.line`,
:mod:`~greenml.report.bars` and :mod:`~greenml.report.pie`.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

WIDTH = 720.0
"""Width of every chart's view box (it scales to the page)."""

FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
PALETTE = (
    "#2f6b4f", "#4a78b5", "#d08c2e", "#8a5a9e",
    "#6b7b8c", "#b5523b", "#3f9c9c", "#a3a33a",
)  # fmt: skip
"""Muted, distinguishable colours (green first: the report's accent)."""
DASHES = ("", "6 3", "2 3", "8 3 2 3")
"""Line patterns that tell series apart once the palette repeats."""
INK, GRID, MUTED = "#333333", "#e3e3e3", "#6b6b6b"
TEXT_PX = 12.0


def esc(text: object) -> str:
    """Text escaped for HTML and SVG content and quoted attributes."""
    return html.escape(str(text), quote=True)


def num(value: float) -> str:
    """A coordinate, short (one decimal)."""
    return f"{value:.1f}".rstrip("0").rstrip(".") if math.isfinite(value) else "0"


def el(tag: str, attrs: dict[str, object] | None = None, inner: str = "") -> str:
    """An element; attribute values are escaped, ``inner`` must already be safe markup."""
    parts = [tag]
    for key, value in (attrs or {}).items():
        text = num(value) if isinstance(value, float) else str(value)
        parts.append(f'{key}="{esc(text)}"')
    opening = " ".join(parts)
    return f"<{opening}>{inner}</{tag}>" if inner else f"<{opening}/>"


def text(x: float, y: float, content: str, **attrs: object) -> str:
    """A ``<text>`` element with escaped content (``anchor`` sets text-anchor)."""
    anchor = attrs.pop("anchor", "start")
    base: dict[str, object] = {"x": x, "y": y, "text-anchor": anchor}
    base.update({_attr(k): v for k, v in attrs.items()})
    return el("text", base, esc(content))


def tip(content: str) -> str:
    """A ``<title>`` child: the browser shows it on hover."""
    return el("title", {}, esc(content))


def text_width(content: str, size: float = TEXT_PX) -> float:
    """Approximate rendered width of a text in a sans-serif font."""
    return len(content) * size * 0.58


def shorten(content: str, limit: int) -> str:
    """At most ``limit`` characters, ending with an ellipsis when cut."""
    return content if len(content) <= limit else content[: limit - 1].rstrip() + "…"


def color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def dash(index: int) -> str:
    return DASHES[(index // len(PALETTE)) % len(DASHES)]


def svg_root(ident: str, title: str, desc: str, height: float, body: str) -> str:
    """The ``<svg>`` of one chart: an image with a title and a description for readers."""
    attrs: dict[str, object] = {
        "class": "greenml-chart",
        "role": "img",
        "aria-labelledby": f"{ident}-title {ident}-desc",
        "viewBox": f"0 0 {num(WIDTH)} {num(height)}",
        "width": "100%",
        "preserveAspectRatio": "xMidYMid meet",
        "font-family": FONT,
        "font-size": num(TEXT_PX),
    }
    head = el("title", {"id": f"{ident}-title"}, esc(title or "Chart"))
    head += el("desc", {"id": f"{ident}-desc"}, esc(desc))
    return el("svg", attrs, head + body)


def legend(names: Sequence[str], top: float, kind: str = "box") -> tuple[str, float]:
    """Swatches and names in rows across the width; returns the markup and its height."""
    x, y, row_h, parts = 0.0, top, 18.0, []
    for i, name in enumerate(names):
        label = shorten(name, 48)
        item_w = 22 + text_width(label) + 18
        if x > 0 and x + item_w > WIDTH:
            x, y = 0.0, y + row_h
        if kind == "line":
            swatch = el("line", {"x1": x, "y1": y + 6.0, "x2": x + 16, "y2": y + 6.0,
                                 "stroke": color(i), "stroke-width": 2.5,
                                 "stroke-dasharray": dash(i) or "none"})  # fmt: skip
        else:
            swatch = el("rect", {"x": x + 2, "y": y, "width": 12.0, "height": 12.0,
                                 "fill": color(i)})  # fmt: skip
        item = swatch + text(x + 22, y + 10.5, label, fill=INK) + tip(name)
        parts.append(el("g", {"class": "legend-item"}, item))
        x += item_w
    return el("g", {"class": "legend"}, "".join(parts)), (y - top) + row_h + 6


def multiline(x: float, y: float, content: str, **attrs: object) -> str:
    """A text whose ``\\n``-separated lines are stacked (tick labels with a date)."""
    lines = content.split("\n")
    spans = "".join(
        el("tspan", {"x": x, "dy": "0" if i == 0 else "1.2em"}, esc(line))
        for i, line in enumerate(lines)
    )
    base: dict[str, object] = {"x": x, "y": y, "text-anchor": attrs.pop("anchor", "middle")}
    base.update({_attr(k): v for k, v in attrs.items()})
    return el("text", base, spans)


def no_data(ident: str, title: str, message: str = "No data") -> str:
    """A chart with nothing to draw says so, rather than vanishing."""
    body = el("rect", {"x": 0.5, "y": 0.5, "width": WIDTH - 1, "height": 79.0,
                       "fill": "none", "stroke": GRID})  # fmt: skip
    body += text(WIDTH / 2, 45.0, message, anchor="middle", fill=MUTED)
    return svg_root(ident, title, f"{title}: {message}.", 80.0, body)


def _attr(keyword: str) -> str:
    """``class_`` → ``class``, ``font_weight`` → ``font-weight``."""
    return keyword.rstrip("_").replace("_", "-")

"""The document every report kind builds, and every renderer (md, html, json) reads.

A report kind (statement, euaiact, sci, label, savings …) turns runs into a
:class:`Report`: sections of paragraphs, tables and figures, plus ``data``,
the machine-readable figures behind them (what ``--format json`` prints).
Renderers never compute anything: what a person reads and what a program reads
come from the same numbers.

Text is plain: renderers escape it for their format (a run named
``<script>`` is shown as text in HTML).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

FigureKind = Literal["line", "bars", "stacked-bars", "pie"]


@dataclass
class Table:
    """A table: column headers and rows of already formatted cells."""

    columns: list[str]
    rows: list[list[str]]
    title: str = ""
    note: str = ""  # a source or footnote shown under the table


@dataclass
class Series:
    """One line or one set of bars: x values (Unix seconds or labels) and y values."""

    name: str
    x: list[float] | list[str]
    y: list[float]


@dataclass
class Figure:
    """A plot, described by its data; each renderer draws it its own way.

    Attributes:
        kind: ``line`` (x: Unix seconds), ``bars`` / ``stacked-bars`` (x: labels),
            or ``pie`` (x: labels).
        title: What the figure shows.
        series: The data, one entry per line or bar group.
        x_label: Axis label, with its unit.
        y_label: Axis label, with its unit.
        error: Per-series ± half-widths of the bars (same length as ``y``), if any.
    """

    kind: FigureKind
    title: str
    series: list[Series]
    x_label: str = ""
    y_label: str = ""
    error: dict[str, list[float]] = field(default_factory=dict)


@dataclass
class Section:
    """A heading with its paragraphs, tables and figures, in that order."""

    heading: str
    paragraphs: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)


FRAME_STYLE = "width:100%;height:640px;border:1px solid #ddd"
"""How a report sits in a notebook: a frame that keeps its style to itself."""


@dataclass
class Report:
    """A whole report.

    Attributes:
        kind: ``statement``, ``euaiact``, ``sci``, ``label``, ``savings`` …
        title: The document's title.
        sections: What a person reads, in order.
        data: The figures behind it, for programs (units in the key names).
        runs: Ids of the runs it covers.
        generated_at: ISO 8601 UTC time of generation.
    """

    kind: str
    title: str
    sections: list[Section]
    data: dict[str, Any]
    runs: list[str]
    generated_at: str

    def _repr_html_(self) -> str:
        """The HTML report (tables and charts) in a notebook, its style kept to itself."""
        from html import escape

        from greenml.report.html import render_html

        page = escape(render_html(self), quote=True)
        return f'<iframe srcdoc="{page}" sandbox style="{FRAME_STYLE}"></iframe>'

    def to_dict(self) -> dict[str, Any]:
        """Everything, as JSON-ready dicts (the ``json`` format)."""
        return asdict(self)

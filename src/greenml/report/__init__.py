"""Reports built from stored runs: one document model, rendered as Markdown, HTML or JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

_LAZY = {
    "build_report": "greenml.report.kinds",
    "Report": "greenml.report.model",
    "render_json": "greenml.report.markdown",
    "render_markdown": "greenml.report.markdown",
    "render_html": "greenml.report.html",
}

__all__ = [
    "Report",
    "build_report",
    "render_html",
    "render_json",
    "render_markdown",
]

if TYPE_CHECKING:
    from greenml.report.html import render_html
    from greenml.report.kinds import build_report
    from greenml.report.markdown import render_json, render_markdown
    from greenml.report.model import Report


__getattr__ = lazy_exports(__name__, _LAZY)

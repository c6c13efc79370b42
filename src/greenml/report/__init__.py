"""Reports built from stored runs: one document model, rendered as Markdown, HTML or JSON."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

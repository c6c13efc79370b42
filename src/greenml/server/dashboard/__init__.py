"""The dashboard: server-rendered HTML pages, readable with JavaScript off.

Charts are the report renderer's inline SVG (:mod:`greenml.report.line`,
:mod:`greenml.report.bars`), so the dashboard and the HTML reports look the
same. Nothing is fetched from elsewhere (no CDN, font or script), every text
is escaped, and the pages carry a Content-Security-Policy that allows no script.
"""

from __future__ import annotations

__all__: list[str] = []  # the pages are served by greenml.server.app; nothing to import
